# SPDX-License-Identifier: MIT
"""Reads abi/functions.list and abi/enums.h: the single source of CCO's device ABI.

Everything derived from the ABI (wrappers, C header, internalize list, JSON table) is
produced from the model this module builds, so the derived files cannot drift apart.
"""

import dataclasses
import itertools
import re

# ABI scalar types: the list's spelling -> C type, LLVM IR type, and the table's name
# (the table's names are those of the guide's system, which DSL bindings already read).
TYPES = {
    "i32": {"c": "int32_t", "llvm": "i32", "table": "int32"},
    "u64": {"c": "uint64_t", "llvm": "i64", "table": "uint64"},
}


@dataclasses.dataclass(frozen=True)
class Arg:
    type: str
    name: str


@dataclasses.dataclass(frozen=True)
class Function:
    symbol: str
    family: str
    op: str            # the symbol without "cco_" and without its axis suffixes
    dsl: str           # Namespace.method (or bare name) in DSL bindings
    ret: str
    pure: bool
    impl: str          # C++ expression naming the implementation in namespace cco::abi
    args: tuple
    axes: tuple        # ((axis, value), ...) as DSL keywords: a compound axis is replaced by what it means
    tag: str           # the guide's variant tag: a compound axis's value ("it"), else the coop, else ""


class AbiListError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Axis:
    name: str
    enum: str
    values: tuple      # ((value, cxx_argument), ...)
    means: dict = dataclasses.field(default_factory=dict, compare=False)  # compound: value -> ((axis, value), ...)


def _parse_axis(tokens, where):
    if len(tokens) < 3:
        raise AbiListError(f"{where}: 'axis NAME ENUM VALUE=CXX ...' needs a name, an enum and values")
    values = []
    for tok in tokens[2:]:
        if "=" not in tok:
            raise AbiListError(f"{where}: axis value {tok!r} is not VALUE=CXX_ARGUMENT")
        value, cxx = tok.split("=", 1)
        values.append((value, cxx))
    return Axis(tokens[0], tokens[1], tuple(values))


def _parse_args(tokens, where):
    args = []
    for tok in tokens:
        type_name = tok.split(":", 1)
        if len(type_name) != 2 or type_name[0] not in TYPES or not type_name[1].isidentifier():
            raise AbiListError(f"{where}: argument {tok!r} is not TYPE:NAME with TYPE in {sorted(TYPES)}")
        args.append(Arg(*type_name))
    if len({a.name for a in args}) != len(args):
        raise AbiListError(f"{where}: repeated argument name")
    return tuple(args)


def _expand(family, symbol_t, dsl, ret, purity, impl_t, args, axes, where):
    # {axis} takes every value of the axis; {axis:v1,v2} only those.
    used = re.findall(r"\{(\w+)(?::([\w,]+))?\}", symbol_t)
    for name, subset in used:
        if name not in axes:
            raise AbiListError(f"{where}: unknown axis {{{name}}}")
        known = {v for v, _ in axes[name].values}
        if subset and not set(subset.split(",")) <= known:
            raise AbiListError(f"{where}: {{{name}:{subset}}} names values the axis does not have")
    op = re.sub(r"__\{[\w:,]+\}", "", symbol_t)
    if "{" in op or not op.startswith("cco_"):
        raise AbiListError(f"{where}: axes must be '__{{axis}}' suffixes of a 'cco_' symbol")
    op = op[len("cco_"):]
    choices = [[vc for vc in axes[name].values if not subset or vc[0] in subset.split(",")] for name, subset in used]
    for combo in itertools.product(*choices):
        symbol, impl = symbol_t, impl_t
        chosen, tag = [], ""
        for (name, subset), (value, cxx) in zip(used, combo):
            symbol = symbol.replace("{%s%s}" % (name, ":" + subset if subset else ""), value)
            impl = impl.replace("{%s}" % name, cxx)
            if axes[name].means:
                chosen.extend(axes[name].means[value])
                tag = value
            else:
                chosen.append((name, value))
                if name == "coop" and not tag:
                    tag = value
        yield Function(symbol, family, op, dsl, ret, purity == "pure", impl, args, tuple(chosen), tag)


def parse_functions(text, path="functions.list"):
    axes = {}
    functions = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        where = f"{path}:{lineno}"
        kind, rest = line[0], line[1:]
        if kind == "axis":
            axis = _parse_axis(rest, where)
            axes[axis.name] = axis
        elif kind == "means":
            # means AXIS VALUE OTHER_AXIS=VALUE ...: a compound axis's value stands for others.
            if len(rest) < 3 or rest[0] not in axes or rest[1] not in {v for v, _ in axes[rest[0]].values}:
                raise AbiListError(f"{where}: 'means AXIS VALUE AXIS=VALUE ...' names an unknown axis or value")
            pairs = []
            for tok in rest[2:]:
                other, _, value = tok.partition("=")
                if other not in axes or value not in {v for v, _ in axes[other].values}:
                    raise AbiListError(f"{where}: {tok!r} is not AXIS=VALUE of a declared axis")
                pairs.append((other, value))
            axes[rest[0]].means[rest[1]] = tuple(pairs)
        elif kind == "fn":
            if len(rest) < 6:
                raise AbiListError(f"{where}: 'fn FAMILY SYMBOL DSL RET PURITY IMPL [ARGS]' is incomplete")
            family, symbol_t, dsl, ret, purity, impl_t = rest[:6]
            if not re.fullmatch(r"([A-Z]\w*\.)?[a-z_]\w*", dsl):
                raise AbiListError(f"{where}: DSL name {dsl!r} is not Namespace.method or method")
            if ret not in TYPES:
                raise AbiListError(f"{where}: return type {ret!r} not in {sorted(TYPES)}")
            if purity not in ("pure", "effect", "read"):
                raise AbiListError(f"{where}: purity {purity!r} is not 'pure', 'effect' or 'read'")
            if purity == "effect" and ret != "i32":
                raise AbiListError(f"{where}: a side-effect function returns i32 (0)")
            args = _parse_args(rest[6:], where)
            functions.extend(_expand(family, symbol_t, dsl, ret, purity, impl_t, args, axes, where))
        else:
            raise AbiListError(f"{where}: unknown directive {kind!r}")
    symbols = [f.symbol for f in functions]
    dupes = sorted({s for s in symbols if symbols.count(s) > 1})
    if dupes:
        raise AbiListError(f"{path}: symbols defined twice: {', '.join(dupes)}")
    return functions, axes


_ENUM_RE = re.compile(r"typedef\s+enum\s+(cco\w+)\s*\{([^}]*)\}\s*(cco\w+)\s*;", re.S)
_VALUE_RE = re.compile(r"^\s*(CCO_\w+)\s*=\s*(-?\d+)\s*$")


def check_axes(axes, enums):
    """Every axis names an enum whose members are exactly its values."""
    for axis in axes.values():
        if axis.enum not in enums:
            raise AbiListError(f"axis {axis.name}: no enum {axis.enum} in enums.h")
        members = {m.lower() for m in enums[axis.enum]}
        unknown = [v for v, _ in axis.values if v not in members]
        if unknown:
            raise AbiListError(f"axis {axis.name}: {unknown} are not members of {axis.enum}")


def parse_enums(text, path="enums.h"):
    """Returns {TableName: {MEMBER: value}}: ccoCoopScope/CCO_COOP_THREAD -> CoopScope/THREAD."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    enums = {}
    for tag, body, name in _ENUM_RE.findall(text):
        if tag != name:
            raise AbiListError(f"{path}: enum tag {tag} differs from its typedef {name}")
        members = []
        for item in filter(str.strip, body.split(",")):
            m = _VALUE_RE.match(item)
            if not m:
                raise AbiListError(f"{path}: {name}: {item.strip()!r} is not 'CCO_NAME = N'")
            members.append((m.group(1), int(m.group(2))))
        prefix = _common_word_prefix([m for m, _ in members])
        enums[name[len("cco"):]] = {m[len(prefix):]: v for m, v in members}
    if not enums:
        raise AbiListError(f"{path}: no enums found")
    return enums


def _common_word_prefix(names):
    """Longest common prefix ending in '_' (never the whole of a member's name)."""
    first = names[0]
    end = 0
    for i, ch in enumerate(first):
        if all(len(n) > i and n[i] == ch for n in names):
            if ch == "_":
                end = i + 1
        else:
            break
    return first[:end]
