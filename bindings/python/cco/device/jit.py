"""JIT build of the device bitcode for one variant (filled in with the LSA device path)."""


def build_if_possible(variant):
    return None
