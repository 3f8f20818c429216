#!/usr/bin/env python3
"""Read shaders/shaders.list, the one declaration of every Vulkan shader module
(its header comment gives the columns), and refuse an inconsistent one.

Used by shaders/embed_spirv.py (the enum and code table), tools/vk_trace.py
(trace names) and tests/vulkan (the drift check).  As a program:
    shader_list.py [--check] [LIST]
prints one module a line (index, module, enum member, trace name); --check also
fails unless every shaders/*.comp next to LIST is some line's source.
"""
import argparse
import glob
import os
import re
import sys
from collections import namedtuple

DEFAULT_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shaders.list")
KINDS = ("portable", "coopmat")
# A tensor-core shader's modules, in enum order: (module suffix, enum suffix, trace suffix).
COOPMAT_VARIANTS = (("", "", ""), ("_khr", "_KHR", "_khr"), ("_khr_bf16", "_BF16", "_bf16"))
WORD = re.compile(r"[a-z][a-z0-9_]*$")

Shader = namedtuple("Shader", "name source kind trace defines line")
Module = namedtuple("Module", "name enum trace coopmat shader")


class ListError(Exception):
    pass


def parse(path=DEFAULT_LIST):
    """The list's shader lines, checked; raises ListError on the first problem."""
    shaders = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            where = f"{path}:{n}"
            if len(words) < 4:
                raise ListError(f"{where}: want name, source, kind, trace [defines...], got {line.strip()!r}")
            name, source, kind, trace, defines = words[0], words[1], words[2], words[3], words[4:]
            for what, w in (("name", name), ("source", source), ("trace name", trace)):
                if not WORD.match(w):
                    raise ListError(f"{where}: {what} {w!r} is not lower-case letters, digits and _")
            if kind not in KINDS:
                raise ListError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
            for d in defines:
                if not d.startswith("-D"):
                    raise ListError(f"{where}: {d!r}: only -D defines go after the trace name")
            shaders.append(Shader(name, source, kind, trace, defines, where))
    if not shaders:
        raise ListError(f"{path}: no shaders")
    seen_coopmat = None
    for s in shaders:
        if s.kind == "coopmat":
            seen_coopmat = s
        elif seen_coopmat:
            raise ListError(f"{s.line}: portable shader {s.name} after the tensor-core shader "
                            f"{seen_coopmat.name}: tensor-core shaders come last")
    mods = modules(shaders)
    for field in ("name", "enum", "trace"):
        first = {}
        for m in mods:
            key = getattr(m, field)
            if key in first:
                raise ListError(f"{m.shader.line}: {field} {key} again (first from {first[key].line})")
            first[key] = m.shader
    return shaders


def modules(shaders):
    """Every module in enum order (a tensor-core shader gives three)."""
    out = []
    for s in shaders:
        variants = COOPMAT_VARIANTS if s.kind == "coopmat" else (("", "", ""),)
        for mod_sfx, enum_sfx, trace_sfx in variants:
            out.append(Module(s.name + mod_sfx, "DK_VK_SH_" + s.name.upper() + enum_sfx, s.trace + trace_sfx,
                              s.kind == "coopmat", s))
    return out


def check_sources(shaders, shader_dir):
    """Every source exists, and every shaders/*.comp is some shader's source."""
    used = {s.source for s in shaders}
    for s in shaders:
        if not os.path.isfile(os.path.join(shader_dir, s.source + ".comp")):
            raise ListError(f"{s.line}: no {s.source}.comp in {shader_dir}")
    for comp in sorted(glob.glob(os.path.join(shader_dir, "*.comp"))):
        src = os.path.basename(comp)[:-len(".comp")]
        if src not in used:
            raise ListError(f"{comp} is no shader's source in the list: add a line for it (or remove the file)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="also check the list against shaders/*.comp")
    ap.add_argument("list", nargs="?", default=DEFAULT_LIST)
    a = ap.parse_args()
    try:
        shaders = parse(a.list)
        if a.check:
            check_sources(shaders, os.path.dirname(os.path.abspath(a.list)))
    except ListError as e:
        sys.exit(f"shader_list: {e}")
    for i, m in enumerate(modules(shaders)):
        print(i, m.name, m.enum, m.trace)


if __name__ == "__main__":
    main()
