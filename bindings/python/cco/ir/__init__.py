# SPDX-License-Identifier: MIT
"""DSL bindings of the CCO device ABI, generated from the ABI table."""
