#!/usr/bin/env bash
# Session 20, third call: the compact GEMV taking the q/k/v GEMV's pending MoE combine (5c51381, reverted
# after: the default step never takes that path). Its same-bits test (now also with the combines in the norm)
# and the attention tests, the decode step against 33f01a7 (two alternations), the timeline, gpu-check.
# Carry: .carry/s20c-gpu.tar.xz, .carry/measuring20c.tar.xz, .carry/old20b-moe.tar.xz.
exec bash bench/plans/session20/against-old.sh .carry/s20c-gpu.tar.xz .carry/measuring20c.tar.xz \
  '*Compact*:*attention*:*Combine*:*combine*' 2
