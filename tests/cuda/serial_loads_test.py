#!/usr/bin/env python3
"""scripts/serial-loads's reading of SASS: after the programmatic wait, loads that go out a few at a time,
each few used before the next issue, make a run of small rounds; one batch of loads used afterwards makes one
round; loads before the wait and kernels without a wait are left out."""
import sys

from sass_text import kernel, load_script

serial_loads = load_script("serial-loads")


def test(name, sass, expected):
    got = [(k, [n for n, _, _ in rounds], serial_loads.longest_run(rounds))
           for k, rounds in serial_loads.load_rounds(sass)]
    if got != expected:
        print(f"FAIL {name}: got {got}, expected {expected}")
        return False
    print(f"ok   {name}")
    return True


# Session 29's norm input before its fix: x and a residual per element, added before the next element's loads.
element_by_element = []
for k in range(5):
    element_by_element += [f"LDG.E R{10 + 2 * k}, desc[UR4][R2.64+0x{k * 0x400:x}]",
                           f"@P1 LDG.E R{11 + 2 * k}, desc[UR4][R4.64+0x{k * 0x400:x}]",
                           f"FADD R{10 + 2 * k}, R{10 + 2 * k}, R{11 + 2 * k}"]
serial = kernel("_Z6serialv", ["LDG.E R40, desc[UR4][R8.64]", "ACQBULK"] + element_by_element)
batched = kernel("_Z7batchedv", ["ACQBULK"] + [f"LDG.E R{10 + k}, desc[UR4][R2.64+0x{k * 0x400:x}]"
                                               for k in range(10)]
                 + [f"FADD R{10 + k}, R{10 + k}, R{11 + k}" for k in range(0, 10, 2)])
# An overwritten destination is no longer a pending load: using the new value waits for nothing.
overwritten = kernel("_Z11overwrittenv", ["ACQBULK", "LDG.E R10, desc[UR4][R2.64]", "MOV R10, RZ",
                                          "FADD R12, R10, R10", "STG.E desc[UR4][R6.64], R10"])
no_wait = kernel("_Z6nowaitv", ["LDG.E R10, desc[UR4][R2.64]", "FADD R10, R10, R10"])

ok = all([
    test("element by element after the wait", serial, [("_Z6serialv", [2, 2, 2, 2, 2], 5)]),
    test("one batch", batched, [("_Z7batchedv", [10], 0)]),
    test("overwritten before use", overwritten, [("_Z11overwrittenv", [], 0)]),
    test("no wait: not listed", no_wait, []),
    test("kernels one after another", no_wait + serial + batched,
         [("_Z6serialv", [2, 2, 2, 2, 2], 5), ("_Z7batchedv", [10], 0)]),
])
sys.exit(0 if ok else 1)
