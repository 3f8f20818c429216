#!/usr/bin/env python3
"""Builds difkern consumers from the *installed* files only.

    header_only.py SOURCE_DIR BUILD_DIR [--meson MESON]

1. `meson install --destdir` of BUILD_DIR into a temporary directory; every macro
   that a library .c file defines must be #undef'd in it (the amalgamation goes on).
2. Header-only: consumer.c with DIFKERN_IMPLEMENTATION (+ consumer_tu2.c, a second
   translation unit with the declarations only) compiled against the installed
   include dir alone with -std=c11 -Wall -Wextra -Werror -pedantic (plus the
   project's -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla), with cc and,
   if present, clang; then run (conv2d and group_norm against naive loops).
   Once more as GNU C with _FORTIFY_SOURCE and <stdlib.h> first (compile only).
   Once more with every optional backend the build has (-DDIFKERN_VULKAN
   -DDIFKERN_HIP).  If the amalgamation does not compile because two files
   define one name, the names and files are listed.
3. Linked: the same consumer against the installed library through pkg-config,
   shared (the binary must need libdifkern.so) and static (it must not).
4. Every installed public header compiles on its own as C11 and as C++11
   (-Wall -Wextra -Werror -pedantic); cxx_check.cpp links and runs as C++.
Exit status: 0 all passed, 1 a failure, 77 skipped (no C compiler).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WARN = ["-Wall", "-Wextra", "-Werror", "-pedantic"]
# The project's own rules, which in one translation unit also catch names of one
# file shadowing names of another.
PROJECT_WARN = ["-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wvla"]
failures = []
SOURCE_DIR = None  # set by main(): where the amalgamated files' sources are


def run(cmd, env=None, cwd=None, what=None, marks=None):
    """Runs cmd; records a failure (with its output) when it exits nonzero.
    marks: the amalgamation's file markers, to name clashing definitions."""
    return report(subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True), cmd, what, marks)


def run_at_once(jobs):
    """The (cmd, what, marks) jobs side by side, one per core (each compiles the
    whole amalgamation), reported in their order as run() reports; their oks."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as ex:
        done = [ex.submit(subprocess.run, cmd, capture_output=True, text=True) for cmd, _, _ in jobs]
        return [report(d.result(), cmd, what, marks)[0] for d, (cmd, what, marks) in zip(done, jobs)]


def report(p, cmd, what, marks):
    """Prints the [ok]/[FAIL] line of a finished cmd, its output and clashing
    names on failure (recorded in failures); (ok, stdout)."""
    label = what or " ".join(shlex.quote(c) for c in cmd)
    ok = p.returncode == 0
    print(f"[{'ok' if ok else 'FAIL'}] {label}")
    if not ok:
        out = (p.stdout + p.stderr).strip()
        print("    $ " + " ".join(shlex.quote(c) for c in cmd))
        print("    " + "\n    ".join(out.splitlines()[-40:]))
        clashes = explain_clashes(out, marks, SOURCE_DIR) if marks else []
        if clashes:
            print("    names defined twice in the amalgamation (give one a file prefix):")
            print("      " + "\n      ".join(clashes))
            label += " [clashes: " + ", ".join(c.split(":")[0] for c in clashes) + "]"
        failures.append(label)
    return ok, p.stdout


MARKER = re.compile(r"^/\* ---- (\S+) ---- \*/$")
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)")
UNDEF = re.compile(r"^\s*#\s*undef\s+(\w+)")
CLASH = re.compile(r"difkern_impl\.h:(\d+)(?::\d+)?: (?:error|warning): (?:"
                   r"(?:redefinition of|conflicting types for|static declaration of)(?: typedef)? "
                   r"[‘'\"](?:struct |union |enum )?(\w+)"
                   r"|[‘'\"](\w+)[’'\"](?: macro)? redefined)")
NOTE = re.compile(r"difkern_impl\.h:(\d+)(?::\d+)?: note: (?:previous|originally|this is the location)")


def impl_files(impl):
    """(line number, source path) of each file the amalgamation inlined."""
    marks = []
    with open(impl, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = MARKER.match(line.strip())
            if m and m.group(1).endswith((".c", ".h")):
                marks.append((n, m.group(1)))
    return marks


def file_at(marks, line):
    """The source file whose text starts last before line (headers inlined in
    the middle of a .c file shadow it until the next marker; good enough to
    name the clash)."""
    best = "?"
    for n, path in marks:
        if n <= line:
            best = path
    return best


def mentions(source_dir, marks, name):
    """The amalgamated files whose text uses name as a word."""
    word = re.compile(r"\b" + re.escape(name) + r"\b")
    hits = []
    for _, rel in marks:
        path = os.path.join(source_dir, rel)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                if word.search(f.read()):
                    hits.append(rel)
    return hits


def explain_clashes(output, marks, source_dir=None):
    """Names that two library files both define, from the compiler's messages."""
    lines = output.splitlines()
    found = []
    for i, line in enumerate(lines):
        m = CLASH.search(line)
        if not m:
            continue
        prev = next((NOTE.search(l) for l in lines[i + 1:i + 4] if NOTE.search(l)), None)
        where = file_at(marks, int(m.group(1)))
        other = file_at(marks, int(prev.group(1))) if prev else "?"
        name = m.group(2) or m.group(3)
        seen = f" (files using it: {', '.join(mentions(source_dir, marks, name))})" if source_dir else ""
        found.append(f"{name}: defined in {other} and again in {where}{seen}")
    return found


def macro_leaks(source_dir, marks):
    """Macros a library .c file defines without #undef-ing them: in the
    amalgamation they would leak into every later file and into the user's code."""
    leaks = []
    for _, rel in marks:
        path = os.path.join(source_dir, rel)
        if not rel.endswith(".c") or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read().splitlines()
        defined = [m.group(1) for m in map(DEFINE.match, text) if m]
        undefined = {m.group(1) for m in map(UNDEF.match, text) if m}
        leaks += [f"{rel}: {name}" for name in dict.fromkeys(defined) if name not in undefined]
    return leaks


def build_sanitize_flags(build_dir):
    """-fsanitize=... when the library was built with b_sanitize: a program that
    links it needs the same runtime."""
    try:
        with open(os.path.join(build_dir, "meson-info", "intro-buildoptions.json"), encoding="utf-8") as f:
            opts = {o["name"]: o["value"] for o in json.load(f)}
    except (OSError, ValueError, KeyError):
        return []
    san = opts.get("b_sanitize", "none")
    if isinstance(san, list):
        san = ",".join(san)
    return [] if san in ("", "none") else [f"-fsanitize={san}"]


def find_one(root, pattern):
    hits = sorted(glob.glob(os.path.join(root, "**", pattern), recursive=True))
    return hits[0] if hits else None


def needed_libs(exe):
    p = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True)
    return [l.split("[", 1)[1].rstrip("]") for l in p.stdout.splitlines() if "(NEEDED)" in l]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source_dir")
    ap.add_argument("build_dir")
    ap.add_argument("--meson", default=shutil.which("meson") or "meson")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    global SOURCE_DIR
    SOURCE_DIR = args.source_dir

    cc = os.environ.get("CC", "cc")
    cxx = os.environ.get("CXX", "c++")
    if not shutil.which(cc.split()[0]):
        print(f"header-only: SKIP: no C compiler ({cc})")
        return 77
    tmp = tempfile.mkdtemp(prefix="dk-header-only-")
    try:
        dest = os.path.join(tmp, "dest")
        ok, _ = run([args.meson, "install", "-C", args.build_dir, "--no-rebuild", "--quiet", "--destdir", dest],
                    what="meson install --destdir")
        if not ok:
            return 1
        header = find_one(dest, "difkern.h")
        impl = find_one(dest, "difkern_impl.h")
        pc = find_one(dest, "difkern.pc")
        if not header or not impl or not pc:
            print(f"header-only: install lacks difkern.h ({header}), difkern/difkern_impl.h ({impl}) "
                  f"or difkern.pc ({pc})")
            return 1
        incdir = os.path.dirname(header)
        print(f"header-only: installed include dir {incdir}")
        src = [os.path.join(HERE, "consumer.c"), os.path.join(HERE, "consumer_tu2.c")]
        marks = impl_files(impl)

        # 1b. amalgamation hygiene: every macro a library .c file defines is #undef'd in it
        leaks = macro_leaks(args.source_dir, marks)
        print(f"[{'FAIL' if leaks else 'ok'}] macros #undef'd at the end of each of the "
              f"{sum(1 for _, r in marks if r.endswith('.c'))} amalgamated .c files")
        if leaks:
            print("    not #undef'd: " + ", ".join(leaks))
            failures.append("macro leaks: " + ", ".join(leaks))

        # 2. header-only, from the installed include dir alone (the builds at once)
        jobs, runs = [], []
        compilers = [cc] + [c for c in ("clang", "clang-14") if shutil.which(c) and c != cc][:1]
        for comp in compilers:
            exe = os.path.join(tmp, f"consumer_header_only_{os.path.basename(comp)}")
            opt = "-O2" if comp == cc else "-O1"  # -O2 once: it enables the most flow warnings
            jobs.append(([comp, "-std=c11", opt] + WARN + PROJECT_WARN + ["-DCONSUMER_HEADER_ONLY", "-I", incdir] +
                         src + ["-o", exe, "-lm", "-pthread"], f"header-only build ({comp})", marks))
            runs.append(([exe], f"header-only run ({comp})"))
        # GNU C with _FORTIFY_SOURCE (Ubuntu's defaults) and <stdlib.h> included first:
        # glibc then defines realpath inline, and its redeclaration inside the
        # implementation's -O3 region (amalgamate.py) is an error unless it steps out
        jobs.append(([cc, "-std=gnu17", "-O2", "-D_FORTIFY_SOURCE=2", "-include", "stdlib.h"] + WARN + PROJECT_WARN +
                     ["-DCONSUMER_HEADER_ONLY", "-I", incdir, "-c", src[0], "-o", os.path.join(tmp, "fortify.o")],
                     f"header-only build, gnu17 + _FORTIFY_SOURCE ({cc})", marks))
        runs.append(None)

        # the same with every optional backend the build has compiled in: amalgamate.py
        # wraps each guarded backend file in "#ifdef MACRO" + its "/* ---- path ---- */" line
        with open(impl, encoding="utf-8") as f:
            guards = sorted(set(re.findall(r"^#ifdef (DIFKERN_\w+)\n/\* ---- ", f.read(), re.M)))
        if not guards:
            print("[skip] header-only with DIFKERN_VULKAN / DIFKERN_HIP: the build has neither backend")
        else:
            label = "+".join(guards)
            exe = os.path.join(tmp, "consumer_header_only_backends")
            jobs.append(([cc, "-std=c11", "-O1"] + WARN + PROJECT_WARN + ["-DCONSUMER_HEADER_ONLY"] +
                         [f"-D{g}" for g in guards] + ["-I", incdir] + src + ["-o", exe, "-lm", "-pthread", "-ldl"],
                         f"header-only build with {label} ({cc})", marks))
            runs.append(([exe], f"header-only run with {label}"))
        for ok, then in zip(run_at_once(jobs), runs):
            if ok and then:
                run(then[0], what=then[1])

        # 3. linked through pkg-config, shared and static
        prefix = os.path.join(dest, os.path.relpath(
            subprocess.run(["pkg-config", "--variable=prefix", pc], capture_output=True, text=True).stdout.strip()
            or "/usr/local", "/"))
        pkg = ["pkg-config", f"--define-variable=prefix={prefix}"]
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pc))
        ok1, cflags = run(pkg + ["--cflags", "difkern"], env=env, what="pkg-config --cflags difkern")
        ok2, libs = run(pkg + ["--libs", "difkern"], env=env, what="pkg-config --libs difkern")
        ok3, slibs = run(pkg + ["--static", "--libs", "difkern"], env=env, what="pkg-config --static --libs difkern")
        if ok1 and ok2 and ok3:
            print(f"header-only: pkg-config: {cflags.strip()} | {libs.strip()} | static: {slibs.strip()}")
            libdir = next((f[2:] for f in shlex.split(libs) if f.startswith("-L")), "")
            san = build_sanitize_flags(args.build_dir)
            if san:
                print(f"header-only: the library is sanitized: linking consumers with {' '.join(san)}")
            run_env = dict(os.environ, LD_LIBRARY_PATH=libdir)
            for kind, flags in (("shared", shlex.split(libs)),
                                ("static", ["-l:libdifkern.a" if f == "-ldifkern" else f
                                            for f in shlex.split(slibs)])):
                lib = os.path.join(libdir, "libdifkern.a" if kind == "static" else "libdifkern.so")
                if not os.path.exists(lib):  # default_library=shared or =static
                    print(f"[skip] pkg-config {kind}: the build installed no {os.path.basename(lib)}")
                    continue
                exe = os.path.join(tmp, f"consumer_{kind}")
                # -lm: consumer.c itself calls exp/sqrt (the library's own -lm is private)
                ok, _ = run([cc, "-std=c11"] + WARN + san + shlex.split(cflags) + src + ["-o", exe] + flags + ["-lm"],
                            what=f"pkg-config {kind} build")
                if not ok:
                    continue
                need = needed_libs(exe)
                has = any(n.startswith("libdifkern") for n in need)
                if has != (kind == "shared"):
                    print(f"[FAIL] {kind} consumer NEEDED entries: {need}")
                    failures.append(f"{kind} link kind")
                run([exe], env=run_env if kind == "shared" else None, what=f"pkg-config {kind} run")
            # C++ consumer, linked to the library (the shared one where there is one)
            exe = os.path.join(tmp, "cxx_check")
            ok, _ = run([cxx, "-std=c++11"] + WARN + san + shlex.split(cflags) + [os.path.join(HERE, "cxx_check.cpp"),
                        "-o", exe] + shlex.split(slibs), what="C++11 consumer build")
            if ok:
                run([exe], env=run_env, what="C++11 consumer run")

        # 4. every installed public header on its own, as C11 and as C++11
        headers = sorted(os.path.relpath(h, incdir) for h in glob.glob(os.path.join(incdir, "**", "*.h"),
                                                                        recursive=True)
                         if os.path.basename(h) != "difkern_impl.h" and
                         (os.path.basename(h) == "difkern.h" or os.sep + "difkern" + os.sep in h))
        for h in headers:
            probe_c = os.path.join(tmp, "probe.c")
            with open(probe_c, "w") as f:
                f.write(f"#include <{h}>\nint main(void) {{ return 0; }}\n")
            run([cc, "-std=c11"] + WARN + ["-fsyntax-only", "-I", incdir, probe_c], what=f"{h} as C11")
            run([cxx, "-std=c++11"] + WARN + ["-fsyntax-only", "-x", "c++", "-I", incdir, probe_c],
                what=f"{h} as C++11")
        # the source tree's header too (what the build itself uses)
        src_h = os.path.join(args.source_dir, "include", "difkern.h")
        run([cxx, "-std=c++11"] + WARN + ["-fsyntax-only", "-x", "c++", src_h], what="include/difkern.h as C++11")
        run([cc, "-std=c11"] + WARN + ["-fsyntax-only", "-x", "c", src_h], what="include/difkern.h as C11")
    finally:
        if args.keep:
            print(f"header-only: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"header-only: FAILED ({len(failures)}): " + "; ".join(failures))
        return 1
    print("header-only: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
