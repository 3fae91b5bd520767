#!/usr/bin/env bash
# Session 20, fourth call (ran with END=330): attention's cluster combine by sends to the heads' owners
# (ce52299) against the pull form of 33f01a7: the attention tests, the decode step (three alternations), the
# timeline, gpu-check at ce52299.
# Carry: .carry/s20d-gpu.tar.xz, .carry/measuring20d.tar.xz, .carry/old20b-moe.tar.xz.
exec bash bench/plans/session20/against-old.sh .carry/s20d-gpu.tar.xz .carry/measuring20d.tar.xz \
  '*attention*:*Compact*' 3
