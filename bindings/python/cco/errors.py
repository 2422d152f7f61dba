# SPDX-License-Identifier: MIT
"""CCOError: a failed C call as a Python exception, with the library's own explanation.

Every ccoResult_t other than ccoSuccess becomes a CCOError carrying the code, its enum
name and the detail ccoGetLastError() gave for the calling thread (which argument,
which rank, which size). Two outcomes callers commonly handle on their own get a
subclass: timeouts and aborts.
"""

from cco import _lib

# ccoResult_t, as in cco.h.
RESULT_NAMES = {
    0: "ccoSuccess",
    1: "ccoInvalidArgument",
    2: "ccoInvalidUsage",
    3: "ccoSystemError",
    4: "ccoPlatformError",
    5: "ccoRemoteError",
    6: "ccoTimeout",
    7: "ccoOutOfMemory",
    8: "ccoAborted",
    9: "ccoUnsupported",
    10: "ccoInternalError",
}
RESULT_CODES = {name: code for code, name in RESULT_NAMES.items()}


class CCOError(RuntimeError):
    """A CCO call failed. `code` is the ccoResult_t, `code_name` its name, `detail` the why."""

    def __init__(self, code: int, detail: str):
        self.code = code
        self.code_name = RESULT_NAMES.get(code, f"ccoResult({code})")
        self.detail = detail
        super().__init__(f"{self.code_name}: {detail}" if detail else self.code_name)

    def __reduce__(self):
        # Errors cross processes (multiprocessing, launchers): rebuild from code and detail.
        return (type(self), (self.code, self.detail))


class CCOTimeoutError(CCOError):
    """A bounded wait expired (CCO_TIMEOUT_MS): a peer is slow, stuck or gone."""


class CCOAbortedError(CCOError):
    """The communicator was aborted; it can only be destroyed now."""


_SUBCLASSES = {
    RESULT_CODES["ccoTimeout"]: CCOTimeoutError,
    RESULT_CODES["ccoAborted"]: CCOAbortedError,
}


def error_for(code: int, detail: str) -> CCOError:
    return _SUBCLASSES.get(code, CCOError)(code, detail)


def check(result: int) -> None:
    """Raises the CCOError for `result` unless it is ccoSuccess.

    Call it right after the C call, on the same thread: the detail is per thread.
    """
    if result == RESULT_CODES["ccoSuccess"]:
        return
    lib = _lib.load()
    detail = (lib.ccoGetLastError() or b"").decode("utf-8", "replace")
    if not detail:  # the library always leaves one; this keeps the message useful anyway
        detail = (lib.ccoGetErrorString(result) or b"").decode("utf-8", "replace")
    raise error_for(result, detail)
