#!/usr/bin/env python3
"""scripts/check-sass's reading of SASS: the descriptor faults it must find (session 19's miscompile, copied
from cuobjdump's output of the measuring build) and the forms it must pass."""
import sys

from sass_text import line, load_script

check_sass = load_script("check-sass")

HEAD = "\t\tFunction : _Z6kernelPKhPf\n"


def test(name, sass, expected):
    got = [(n, text.split()[0]) for _, n, text in check_sass.bad_descriptors(sass)]
    if got != expected:
        print(f"FAIL {name}: got {got}, expected {expected}")
        return False
    print(f"ok   {name}")
    return True


# Session 19's measuring build: the policy built in UR8:UR9, then UR8 overwritten, and the copies reading UR1.
miscompiled = HEAD + "".join([
    line(0x520, "UMOV UR8, 0xf0"),
    line(0x590, "UMOV UR8, URZ"),
    line(0x5d0, "UMOV UR8, UR10"),
    line(0x620, "LDGSTS.E.BYPASS.128 [R6+UR0], desc[UR1][R8.64], P2"),
    line(0x670, "LDGSTS.E.BYPASS.128 [R6+UR0+0x1000], desc[UR1][R8.64+0x200], P3"),
])
# The normal build of the same kernel: the policy in UR4:UR5.
normal = HEAD + "".join([
    line(0x440, "USHF.L.U32 UR5, UR5, 0x14, URZ"),
    line(0x450, "UMOV UR4, URZ"),
    line(0x510, "LDGSTS.E.BYPASS.128 [R13], desc[UR4][R4.64], P4"),
])
# The default descriptor from the constant bank, as most kernels read global memory.
default = HEAD + "".join([
    line(0x20, "ULDC.64 UR12, c[0x0][0x208]"),
    line(0x50, "LDG.E.64 R4, desc[UR12][R4.64]"),
    line(0x60, "@P0 STG.E desc[UR12][R2.64], R5"),
])
# An even register nothing writes, in a second kernel after a clean first one.
unwritten = default + "\t\tFunction : _Z7kernel2v\n" + line(0x30, "LDG.E R4, desc[UR6][R4.64]")

ok = all([
    test("miscompiled copies", miscompiled, [(1, "LDGSTS.E.BYPASS.128"), (1, "LDGSTS.E.BYPASS.128")]),
    test("normal build", normal, []),
    test("default descriptor", default, []),
    test("unwritten even register", unwritten, [(6, "LDG.E")]),
])
sys.exit(0 if ok else 1)
