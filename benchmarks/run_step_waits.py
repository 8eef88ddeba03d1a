"""Where a script's input wait sits under `pipediag run`: per-step waits of its real loop against
their position, in chunks of 50 steps, and the largest single waits (issue 24, the custom
MirroredStrategy loop that `run` read as input while diagnose on its builder read compute).

    KERAS_HOME=... flock /tmp/cpu.lock python benchmarks/run_step_waits.py SCRIPT STEPS

Runs SCRIPT under pipediag run's library entry point with `observe_steps=STEPS` (the whole
observation timed, no stability stop), a short synthetic window only, no anatomy; prints what it
measured. Timings vary from run to run: the printout is one run's.
"""

import sys

from pipediag.records.run import StopRule
from pipediag.run.launch import ScriptTarget
from pipediag.run.script import run_script
from pipediag.run.session import ScriptPlan


def main(script: str, steps: int) -> None:
    plan = ScriptPlan(observe_steps=steps, modes=("synthetic",), anatomy=False,
                      rule=StopRule(max_seconds=3, min_seconds=1))
    result = run_script(ScriptTarget(script, None, ()), plan)
    run = result.diagnosis.runs["pipeline"]
    w, c = run.wait_ns, run.compute_ns
    print("steps", len(w), "warmup", run.warmup_steps, "stop", run.stop_reason)
    print("wait share", sum(w) / (sum(w) + sum(c)))
    print("wait ms p10/50/90/99/max", [round(sorted(w)[int(q * (len(w) - 1))] / 1e6, 2) for q in (0.1, 0.5, 0.9, 0.99, 1.0)])
    print("rest ms p10/50/90", [round(sorted(c)[int(q * (len(c) - 1))] / 1e6, 2) for q in (0.1, 0.5, 0.9)])
    for i in range(0, len(w), 50):
        ww, cc = w[i:i + 50], c[i:i + 50]
        print(f"steps {i + run.warmup_steps:4d}-: wait {sum(ww) / 1e6 / len(ww):6.2f} ms/step  "
              f"rest {sum(cc) / 1e6 / len(cc):6.2f}  share {sum(ww) / (sum(ww) + sum(cc)):.2f}")
    big = sorted(range(len(w)), key=lambda k: -w[k])[:10]
    print("largest waits (pos, ms):", [(k + run.warmup_steps, round(w[k] / 1e6, 1)) for k in sorted(big)])
    for s in result.diagnosis.settings.get("datasets", []):
        print(s)
    print("epoch starts:", result.diagnosis.settings.get("epoch_starts"))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
