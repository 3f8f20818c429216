#!/usr/bin/env python3
"""Runs difkern-doctor and checks what it promises (docs/doctor.md).

  check_doctor.py pass    DOCTOR ARGS...   exit 0, both reports well formed and passing
  check_doctor.py inject  DOCTOR ARGS...   (with an injected wrong result) exit 1, the case and a
                                           reproducer printed, both reports say failed
  check_doctor.py badargs DOCTOR           bad command lines: exit 2, a clear message, no report

Exit 0 when the checks hold, 77 when the doctor found nothing to test (no device of
the backend asked for), 1 otherwise.  Reports go to a temporary directory.
"""
import json
import os
import subprocess
import sys
import tempfile

OPS = ["conv2d", "conv_transpose2d", "matmul", "linear", "group_norm", "layer_norm", "rms_norm", "attention",
       "add", "activation", "activation_scaled", "upsample_nearest", "convert"]
BENCH = ["conv2d_3x3", "conv_transpose2d", "group_norm_silu", "attention_d512", "sdxl_decode"]


def fail(msg, out=""):
    if out:
        sys.stdout.write(out)
    print("check_doctor: FAIL: " + msg)
    sys.exit(1)


def run(doctor, args, cwd):
    p = subprocess.run([doctor] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def need(cond, msg, out=""):
    if not cond:
        fail(msg, out)


def load_reports(prefix, out):
    md_path, js_path = prefix + ".md", prefix + ".json"
    need(os.path.isfile(md_path) and os.path.isfile(js_path), "report files missing", out)
    with open(js_path, encoding="utf-8") as f:
        try:
            rep = json.load(f)
        except ValueError as e:
            fail("the JSON report does not parse: %s" % e, out)
    with open(md_path, encoding="utf-8") as f:
        md = f.read()
    leftovers = [n for n in os.listdir(os.path.dirname(prefix)) if ".tmp." in n]
    need(not leftovers, "temporary files left beside the reports: %s" % leftovers, out)
    for key in ["schema", "difkern_version", "started", "command", "seed", "case_selection", "views", "backends_compiled",
                "runtimes", "vulkan_devices", "targets", "summary", "cannot_know", "environment"]:
        need(key in rep, "JSON report lacks '%s'" % key, out)
    need(rep["schema"] == "difkern-doctor/1", "schema is %r" % rep["schema"], out)
    for key in ["vulkan_loader", "hip", "cuda"]:
        need(key in rep["runtimes"], "runtimes lacks '%s'" % key, out)
    for key in ["result", "passed", "failed", "unsupported", "targets_tested", "exit_status"]:
        need(key in rep["summary"], "summary lacks '%s'" % key, out)
    need(len(rep["cannot_know"]) > 0, "cannot_know is empty", out)
    for d in rep["vulkan_devices"]:
        for key in ["name", "type", "api_version", "driver_name", "driver_version", "subgroup",
                    "cooperative_matrix_khr", "cooperative_matrix_nv", "bfloat16", "memory_heaps", "usable"]:
            need(key in d, "Vulkan device lacks '%s'" % key, out)
    for t in rep["targets"]:
        for key in ["label", "backend", "status", "device", "description", "ops", "failures", "bench"]:
            need(key in t, "target lacks '%s'" % key, out)
        if t["status"] in ("passed", "failed") and t["description"]:
            for op in OPS:
                need(op in t["ops"], "target %s lacks op %s" % (t["label"], op), out)
                for key in ["status", "passed", "failed", "unsupported", "family", "why_not_faster"]:
                    need(key in t["ops"][op], "op %s lacks '%s'" % (op, key), out)
    need(md.startswith("# difkern-doctor report"), "markdown report has no title", out)
    for heading in ["## Runtimes and devices", "## Results per target", "## What this report cannot tell"]:
        need(heading in md, "markdown report lacks '%s'" % heading, out)
    return rep, md


def tested_targets(rep):
    return [t for t in rep["targets"] if t["status"] in ("passed", "failed") and t["description"]]


def check_pass(doctor, args, tmp):
    prefix = os.path.join(tmp, "report")
    rc, out, err = run(doctor, args + ["--out", prefix], tmp)
    out += err
    if rc == 77:
        rep, _ = load_reports(prefix, out)
        need(rep["summary"]["result"] == "nothing tested", "exit 77 but the report says otherwise", out)
        print(out + "check_doctor: nothing to test here (skipped)")
        sys.exit(77)
    need(rc == 0, "exit status %d, expected 0" % rc, out)
    rep, md = load_reports(prefix, out)
    need(rep["summary"]["result"] == "passed" and rep["summary"]["failed"] == 0, "the report does not say passed", out)
    need(rep["summary"]["passed"] > 0, "no case passed", out)
    need("**Result: PASSED**" in md, "the markdown report does not say PASSED", out)
    targets = tested_targets(rep)
    need(targets, "no target was tested", out)
    for t in targets:
        need(t["status"] == "passed", "target %s: %s" % (t["label"], t["status"]), out)
        if "--no-bench" not in args:
            need(t["bench"] and len(t["bench"]["results"]) == len(BENCH), "target %s: no benchmark" % t["label"], out)
            for b, name in zip(t["bench"]["results"], BENCH):
                need(b["name"] == name, "benchmark %s, expected %s" % (b["name"], name), out)
                need(b["status"] == "timed" and b["ms"] > 0 and b["tflops"] > 0,
                     "benchmark %s not timed: %s" % (name, b["error"]), out)
            need(t["bench"]["results"][4]["peak_device_bytes"] > 0, "decode without a memory peak", out)
    print(out + "check_doctor: pass run OK")


def check_inject(doctor, args, tmp):
    prefix = os.path.join(tmp, "report")
    rc, out, err = run(doctor, args + ["--out", prefix], tmp)
    out += err
    if rc == 77:
        print(out + "check_doctor: nothing to test here (skipped)")
        sys.exit(77)
    need(rc == 1, "exit status %d with an injected wrong result, expected 1" % rc, out)
    rep, md = load_reports(prefix, out)
    need(rep["summary"]["result"] == "failed" and rep["summary"]["failed"] > 0, "the report does not say failed", out)
    need("**Result: FAILED**" in md, "the markdown report does not say FAILED", out)
    need(rep["inject"], "the report does not say a result was perturbed", out)
    fails = [f for t in rep["targets"] for f in t["failures"]]
    need(fails, "no failure recorded", out)
    for f in fails:
        need(f["case"] and f["error"] and f["reproducer"].find("difkern-doctor") >= 0, "incomplete failure %r" % f, out)
        need("--case '%s'" % f["case"] in f["reproducer"], "the reproducer does not name the case", out)
        need(f["case"] in out and f["reproducer"] in out, "the case or its reproducer was not printed", out)
        need(f["case"] in md, "the markdown report lacks the failed case", out)
    print(out + "check_doctor: injected failure reported (%d cases)" % len(fails))


def check_badargs(doctor, tmp):
    cases = [
        (["--backend", "opencl"], "--backend 'opencl'"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
        (["--device", "x"], "--device 'x'"),
        (["--op", "conv4d"], "--op 'conv4d' is not an op"),
        (["--seed"], "--seed needs a value"),
        (["--seed", "-4"], "--seed '-4'"),
        (["--case", "no/such/case"], "no case matches"),
        (["--out", os.path.join(tmp, "missing-dir", "r")], "cannot write reports into"),
    ]
    for args, text in cases:
        rc, out, err = run(doctor, args, tmp)
        need(rc == 2, "%s: exit status %d, expected 2" % (args, rc), out + err)
        need(text in err, "%s: stderr lacks %r" % (args, text), out + err)
        need(not [n for n in os.listdir(tmp) if n.startswith("difkern-doctor-report")],
             "%s: a report was written" % args, out + err)
    rc, out, err = run(doctor, ["--help"], tmp)
    need(rc == 0 and "--quick-bench" in out, "--help", out + err)
    print("check_doctor: %d bad command lines rejected" % len(cases))


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("pass", "inject", "badargs"):
        print(__doc__)
        return 2
    mode, doctor, args = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3:]
    with tempfile.TemporaryDirectory(prefix="dk-doctor-") as tmp:
        if mode == "pass":
            check_pass(doctor, args, tmp)
        elif mode == "inject":
            check_inject(doctor, args, tmp)
        else:
            check_badargs(doctor, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
