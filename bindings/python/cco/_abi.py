"""Numbers fixed by the C ABI (abi/version.h, abi/enums.h, cco.h), mirrored for ctypes.

They are written out rather than read from the ABI table so that `import cco` needs
neither the table nor libcco.so; tests/python compares every one of them with the table,
the headers and the loaded library, so a drift fails a test instead of a job.
"""

ABI_VERSION = 6

DEV_COMM_MAGIC = 0x444F4343  # "CCOD"
WINDOW_MAGIC = 0x574F4343  # "CCOW"
DEV_COMM_REQUIREMENTS_MAGIC = 0x524F4343  # "CCOR"

UNIQUE_ID_BYTES = 128

# ccoGdaConnectionType: which peers get GDA (RDMA) connections.
GDA_CONNECTION_NONE = 0
GDA_CONNECTION_CROSSNODE = 1
GDA_CONNECTION_FULL = 2
GDA_CONNECTION_RAIL = 3

# ccoPlatform_t, by the names Communicator.platform reports.
PLATFORM_NAMES = {0: "cpu", 1: "cuda", 2: "hip"}

# CCO_VERSION_MAJOR / MINOR / PATCH of cco.h.
VERSION = (0, 1, 0)
