"""pipediag: why is my GPU idle, and what exactly do I change?

    import pipediag
    diagnosis = pipediag.diagnose(make_dataset, model=model)
    print(diagnosis.verdict.bottleneck, [f.title for f in diagnosis.fixes])
    comparison = pipediag.compare(make_dataset, make_dataset_v2, model=model)
    print(comparison.verdict.verdict, comparison.interval)
    model.fit(pipediag.tuned(make_dataset, "run.json"))  # the measured gains, applied

Importing pipediag does not import TensorFlow; `diagnose()` and `compare()` do, when they run.
"""

from pipediag import _imported  # noqa: F401  (first: when pipediag was imported, for the start-up time)
from pipediag._version import __version__
from pipediag.api.compare import compare
from pipediag.api.diagnose import diagnose
from pipediag.api.tuned import TunedResult, tuned, tuned_pipeline
from pipediag.errors import PipediagError, UsageError, UserCodeError
from pipediag.records.options import RunOptions
from pipediag.records.run import StopRule
from pipediag.results.compare import Comparison
from pipediag.results.diagnose import Diagnosis, read_json

__all__ = ["__version__", "diagnose", "Diagnosis", "read_json", "StopRule", "compare", "Comparison",
           "PipediagError", "UsageError", "UserCodeError",
           "tuned", "tuned_pipeline", "TunedResult", "RunOptions"]
