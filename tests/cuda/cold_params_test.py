#!/usr/bin/env python3
"""scripts/cold-params's reading of SASS: parameter lines and bank-2 reads first made after the programmatic
wait count, those read before it (or below the parameters) do not, and kernels without a wait are left out."""
import sys

from sass_text import kernel, load_script

cold_params = load_script("cold-params")


def test(name, sass, expected):
    got = cold_params.cold_reads(sass)
    if got != expected:
        print(f"FAIL {name}: got {got}, expected {expected}")
        return False
    print(f"ok   {name}")
    return True


# The router kernel before its warm-up: the routing's parameters and its jump table after the wait.
cold = kernel("_Z4coldv", [
    "LDC R1, c[0x0][0x28]",             # the stack pointer: below the parameters
    "ULDC.64 UR4, c[0x0][0x210]",       # a pointer read before the wait: line 0x200 warm
    "ACQBULK",
    "ULDC UR6, c[0x0][0x218]",          # the same line: warm
    "LDC.64 R10, c[0x0][0x2c0]",        # cold
    "ULDC.U8 UR5, c[0x0][0x288]",       # cold (line 0x280)
    "LDC R8, c[0x0][0x2c8]",            # line 0x2c0 again: counted once
    "ULDC UR7, c[0x2][UR5]",            # the jump table
])
warm = kernel("_Z4warmv", [
    "ULDC UR5, c[0x0][0x2c0]",
    "@!P0 LDC R6, c[0x0][0x288]",
    "ACQBULK",
    "LDC.64 R10, c[0x0][0x2c8]",
    "ULDC.U8 UR5, c[0x0][0x29c]",
])
no_wait = kernel("_Z6nowaitv", ["LDC R8, c[0x0][0x300]", "ULDC UR7, c[0x2][UR5]"])

ok = all([
    test("cold reads after the wait", cold, [("_Z4coldv", ["0x2c0", "0x280", "bank2"])]),
    test("warmed before the wait", warm, [("_Z4warmv", [])]),
    test("no wait: not listed", no_wait, []),
    test("kernels one after another", no_wait + cold + warm,
         [("_Z4coldv", ["0x2c0", "0x280", "bank2"]), ("_Z4warmv", [])]),
])
sys.exit(0 if ok else 1)
