#!/usr/bin/env python3
"""shaders/shaders.list is the one declaration of the Vulkan shader modules:
check that nothing drifted from it.

usage: test_shader_list.py SOURCE_ROOT GENERATED_ENUM_H
- the list is consistent and every shaders/*.comp is some line's source;
- the generated enum header holds the list's modules, in its order, and puts
  DK_VK_SH_FIRST_COOPMAT on the first tensor-core module;
- no source outside the generated headers names a module's SPIR-V array or
  keeps its own shader table, and every DK_VK_SH_* it uses is generated;
- the reader refuses inconsistent lists (so the checks above cannot pass on a
  list the generator would have misread).
"""
import glob
import os
import re
import sys
import tempfile


def fail(msg):
    sys.exit(f"test_shader_list: {msg}")


def main():
    if len(sys.argv) != 3:
        fail("usage: test_shader_list.py SOURCE_ROOT GENERATED_ENUM_H")
    root, enum_h = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(root, "shaders"))
    import shader_list

    list_path = os.path.join(root, "shaders", "shaders.list")
    try:
        shaders = shader_list.parse(list_path)
        shader_list.check_sources(shaders, os.path.join(root, "shaders"))
    except shader_list.ListError as e:
        fail(str(e))
    mods = shader_list.modules(shaders)

    with open(enum_h, encoding="utf-8") as f:
        header = f.read()
    members = re.findall(r"^\s+(DK_VK_SH_\w+)(?: = 0)?,", header, re.M)
    if members != [m.enum for m in mods]:
        fail(f"{enum_h} enumerates {members}, the list {[m.enum for m in mods]}")
    first = re.search(r"#define DK_VK_SH_FIRST_COOPMAT (\w+)", header)
    want_first = next((m.enum for m in mods if m.coopmat), "DK_VK_SH_COUNT")
    if not first or first.group(1) != want_first:
        fail(f"{enum_h}: DK_VK_SH_FIRST_COOPMAT is not {want_first}")

    generated = set(members) | {"DK_VK_SH_COUNT", "DK_VK_SH_FIRST_COOPMAT"}
    for path in sorted(glob.glob(os.path.join(root, "backends", "vulkan", "*.[ch]"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, root)
        if re.search(r"dk__vk_spv_\w+", text):
            fail(f"{rel} names a module's SPIR-V array: use dk__vk_spirv[DK_VK_SH_...] (shaders/shaders.list)")
        if re.search(r"typedef\s+enum\s+dk_vk_shader\b", text):
            fail(f"{rel} declares enum dk_vk_shader by hand: it is generated from shaders/shaders.list")
        for used in sorted(set(re.findall(r"\bDK_VK_SH_\w+", text)) - generated):
            fail(f"{rel} uses {used}, which shaders/shaders.list does not declare")

    bad_lists = {
        "portable after coopmat": "a_cm a coopmat acm\nb b portable b\n",
        "duplicate name": "a a portable a\na b portable b\n",
        "duplicate trace name": "a a portable t\nb b portable t\n",
        "enum clash with a KHR module": "x x coopmat x\nx_khr x coopmat y\n",
        "unknown kind": "a a fast a\n",
        "missing column": "a a portable\n",
        "non-define argument": "a a portable a -O\n",
        "empty list": "# nothing\n",
    }
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "shaders.list")
        for what, text in bad_lists.items():
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text)
            try:
                shader_list.parse(bad)
            except shader_list.ListError:
                continue
            fail(f"the reader took a list with a {what}")
        for src in ("a", "b"):
            open(os.path.join(tmp, src + ".comp"), "w").close()
        with open(bad, "w", encoding="utf-8") as f:
            f.write("a a portable a\n")
        try:
            shader_list.check_sources(shader_list.parse(bad), tmp)
            fail("the check took a shaders/*.comp that no line uses")
        except shader_list.ListError:
            pass
    print(f"shaders.list: {len(shaders)} shaders, {len(mods)} modules, generated enum and sources agree")


if __name__ == "__main__":
    main()
