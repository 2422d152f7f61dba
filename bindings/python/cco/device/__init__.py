# SPDX-License-Identifier: MIT
"""cco.device: the device ABI as data, and where its bitcode is.

CCO_DEVICE_FUNCTIONS is read from the committed ABI table (abi/cco_abi_table.json): one
entry per exported symbol, in the guide's shape ({"symbol", "args", "ret", "pure",
"family", ...}). find_cco_bitcode() returns the bitcode for a GPU target.
"""

from cco.device.abi_table import (  # noqa: F401
    ABI_VERSION,
    CCO_DEVICE_FUNCTIONS,
    ENUMS,
    TARGETS,
    load_abi_table,
)
from cco.device.bitcode import (  # noqa: F401
    BitcodeError,
    bitcode_abi_version,
    find_cco_bitcode,
    variant_for_target,
)
