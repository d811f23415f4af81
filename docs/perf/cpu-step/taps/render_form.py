# PYTHONPATH=. python docs/perf/cpu-step/taps/render_form.py /tmp/exp/NAME.pkl OUT.mlir contraction=taps [key=value ...]
# (problem_mlir.py in ../forms-tried writes NAME.pkl); the module of the problem in the form the keys give
"""render a pickled problem in a given form: python render_form.py PKL OUT.mlir key=value ..."""
import pickle, sys, dataclasses
from ops import policy, targets, registry
p = pickle.load(open(sys.argv[1], "rb"))
t = targets.target_for_device("local-task")
keys = {k: int(v) if v.isdigit() else v for k, v in (a.split("=") for a in sys.argv[3:])}
specs = policy.module_specs(p, t, options=keys)
open(sys.argv[2], "w").write(specs[0].mlir)
print(specs[0].name)
