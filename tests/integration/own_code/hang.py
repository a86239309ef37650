"""hang.py - a training program that ignores every request to stop.

sched_preempt.sh runs it as a command job: it reports a step every 0.2 s,
checkpoints once, at step 5, and ignores SIGUSR1 and SIGTERM, so a
preemption's "save now" goes unheard, only the end of the grace period
(and Slurm's SIGKILL) stops it, and the steps after 5 are lost.
"""

import os
import signal
import time

import trainyard

signal.signal(signal.SIGUSR1, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
r = trainyard.resume()
start = r[0] + 1 if r else 1
for step in range(start, 1000000):
    time.sleep(0.2)
    trainyard.report_step(step, loss=10.0 / step)
    if step == 5:
        with open(os.path.join(trainyard.checkpoint_dir(step), "state"), "w") as f:
            f.write(str(step))
        trainyard.checkpoint_done(step)
