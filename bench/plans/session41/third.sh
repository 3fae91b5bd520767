#!/usr/bin/env bash
# Session 41's third plan: the second's (second.sh) on carry .carry/s41e.tar.xz and .carry/s41e-cycles.tar.xz,
# built from branch next/s41-h-box where MOE_WGMMA_SWAP_H_BOX=1 takes the pairs' scales by cp.async (the
# second call's run faulted at their tensor-map box, now form 2, probed once in its own process).
CARRY=.carry/s41e.tar.xz CYCLES=.carry/s41e-cycles.tar.xz PROBE_HBOX2=1 exec bash bench/plans/session41/second.sh
