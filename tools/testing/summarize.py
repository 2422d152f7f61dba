#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Counts test cases from one `bazel test` run: its console output names the targets it
ran (and their status), their test.xml files hold the cases.

  summarize.py BAZEL_OUTPUT_FILE TESTLOGS_DIR   ->  prints "passed failed"

A target that did not produce cases (failed to build, timed out, crashed) counts as one
failure; stale XML from earlier runs is never read, only targets this run reported.
"""

import os
import re
import sys
import xml.etree.ElementTree as ET

STATUS = re.compile(
    r"^(//\S+)\s+(?:\(cached\)\s+)?(PASSED|FAILED TO BUILD|FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)\b")


def count_cases(xml_path):
    root = ET.parse(xml_path).getroot()
    passed = failed = 0
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is None:
            passed += 1
    return passed, failed


def main(argv):
    output, testlogs = argv
    passed = failed = 0
    with open(output, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = STATUS.match(line.strip())
            if not m:
                continue
            target, status = m.groups()
            xml = os.path.join(testlogs, target[2:].replace(":", "/"), "test.xml")
            cases = (0, 0)
            if status in ("PASSED", "FAILED", "FLAKY") and os.path.exists(xml):
                try:
                    cases = count_cases(xml)
                except ET.ParseError:
                    pass
            if cases == (0, 0):
                cases = (1, 0) if status == "PASSED" else (0, 1)
            elif status != "PASSED" and cases[1] == 0:
                cases = (cases[0], 1)  # the target failed outside its cases (crash, leak check)
            passed += cases[0]
            failed += cases[1]
    print(passed, failed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
