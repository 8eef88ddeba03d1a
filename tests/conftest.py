import ast
import importlib.util
import os
import signal
import sys

import pytest

from pipediag import backends

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "pipelines.py")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests import alone  # noqa: E402 (after ROOT is on the path)
from tests.alone import pytest_runtest_protocol, pytest_unconfigure  # noqa: E402, F401 (its hooks, for pytest)


@pytest.fixture
def fixture_spec():
    """`tests/fixtures/pipelines.py:NAME` for CLI tests."""

    def spec(name: str) -> str:
        return f"{FIXTURES}:{name}"

    return spec


@pytest.fixture
def cli_main(capsys, monkeypatch):
    """`pipediag ARGS` run by `pipediag.cli.main` in this process, returned as a finished process
    (exit code, stdout, stderr), for tests of what the command says and returns rather than of the
    process itself; COLUMNS as the subprocess tests set it, so messages wrap where theirs do."""
    import subprocess

    from pipediag.cli import main

    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys, "path", list(sys.path))  # a user's file puts its folder first, as a process would

    def run(*args):
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["pipediag", *args], code, out, err)

    return run


@pytest.fixture(scope="session")
def quick_rule():
    from pipediag.records.run import StopRule

    return StopRule(max_seconds=3.0, min_seconds=0.5, min_steps=10, warmup_steps=3)


def _nvml_gpu_reason():
    """None when NVML sees a GPU; else why `gpu` tests are skipped."""
    from pipediag.backends import nvml

    session = nvml.open_session()
    if isinstance(session, nvml.NotAvailable):
        return session.reason
    session.close()
    return None


# The tests that need TensorFlow, in one place: files and folders below tests/, or single tests
# (`file::name`) where a file mixes both kinds. They are marked `tf` here, so `pytest -m "not tf"`
# runs the rest; where TensorFlow is not installed, a listed module is reported as skipped instead
# of failing to import, and a listed test is skipped.
TF_TESTS = (
    "tests/builder/test_batch_reading.py",
    "tests/builder/test_dataset.py",
    "tests/builder/test_functions.py",
    "tests/builder/test_graph.py",
    "tests/builder/test_object_chain.py",
    "tests/builder/test_objects.py",
    "tests/builder/test_prepare.py",
    "tests/builder/test_tfds_target.py",
    "tests/backends/test_tf_import.py",
    "tests/backends/test_eager_gradients.py",
    "tests/callbacks/test_keras.py",
    "tests/commands/test_fix.py",
    "tests/patch/test_decode_crop_tf.py",
    "tests/tuner/test_ablation.py",
    "tests/tuner/test_batch_csv.py",
    "tests/tuner/test_cache_repeat.py",
    "tests/modes/test_cache_memory.py",
    "tests/modes/test_partial_batches.py",
    "tests/tuner/test_decode_crop.py",
    "tests/tuner/test_decode_crop_across.py",
    "tests/tuner/test_decode_crop_inception.py",
    "tests/tuner/test_decode_reduce.py",
    "tests/modes/test_feeds.py",
    "tests/modes/test_handover.py",
    "tests/modes/test_probe.py",
    "tests/modes/test_scale.py",
    "tests/tuner/test_rewrite.py",
    "tests/modes/test_waterfall.py",
    "tests/steps/test_frameworks.py",
    "tests/steps/test_keras_step.py",
    "tests/steps/test_precision.py",
    "tests/steps/test_standin.py",
    "tests/api/test_cache_fill.py",
    "tests/api/test_diagnose.py",
    "tests/api/test_eager.py",
    "tests/api/test_compare.py",
    "tests/test_faults_api.py",
    "tests/test_frameworks_api.py",
    "tests/test_gpu_scenarios.py",
    "tests/test_keras_backends.py",
    "tests/test_multigpu_api.py",
    "tests/api/test_scale.py",
    "tests/api/test_tuned.py",
    "tests/run",
    # run TensorFlow at run time (a pipediag subprocess or a fixture pipeline), not at import:
    "tests/test_cli_container.py",
    "tests/test_cli_errors.py",
    "tests/test_cli_faults.py",
    "tests/commands/test_scale.py::test_interrupt_stops_every_server_and_writes_the_partial_report",
    "tests/modes/test_new_shapes.py::test_a_real_keras_model_on_a_finite_dataset_keeps_out_its_short_batch_retrace",
    "tests/report/test_container_report.py::test_terminal_and_html_show_the_limits_and_each_modes_throttling",
    "tests/scenarios/test_scenarios.py::test_pipediag_still_finds_the_planted_bottleneck",
    "tests/scenarios/test_scenarios.py::test_scenario_file_is_complete",
    "tests/scenarios/test_scripts.py::test_the_data_maker_writes_what_the_script_opens_and_the_builder_yields_a_batch",
    "tests/service/test_cluster.py::test_a_dead_worker_is_reported",
    "tests/service/test_cluster.py::test_dispatcher_and_workers_start_on_os_chosen_ports_and_stop_without_a_trace",
    "tests/service/test_cluster.py::test_servers_exit_by_themselves_when_pipediag_is_killed",
    "tests/test_cli.py::test_args_and_batch_size_reach_the_builder",
    "tests/test_cli.py::test_bad_spec_is_a_usage_error_with_a_hint",
    "tests/test_cli.py::test_builder_returning_a_list_exits_2",
    "tests/test_cli.py::test_ctrl_c_leaves_a_partial_report_in_every_output",
    "tests/test_cli.py::test_demo_runs",
    "tests/test_cli.py::test_diagnose_writes_json_and_report_reprints_it",
    "tests/test_cli.py::test_json_dash_pipes_the_diagnosis_alone_with_the_report_on_stderr",
    "tests/test_cli.py::test_missing_file_is_a_usage_error",
    "tests/test_cli.py::test_unbatched_dataset_exits_2_with_a_hint",
    "tests/test_cli.py::test_users_failing_step_exits_1_with_their_traceback_only",
    "tests/test_cli_compare.py::test_a_missing_baseline_file_is_a_usage_error",
    "tests/test_cli_compare.py::test_arg_a_and_arg_b_compare_two_settings_of_one_builder",
    "tests/test_cli_compare.py::test_fail_if_slower_against_a_saved_baseline_exits_3",
    # skip themselves inside the test (pytest.importorskip) where TensorFlow is missing:
    "tests/backends/test_memory_limit.py::test_tensorflow_cpu_build_has_no_gpu_to_limit",
    "tests/scenarios/test_real_truth.py::test_prefixes_run_from_the_source_to_the_dataset",
    "tests/scenarios/test_scenarios.py::test_the_tuned_pipeline_is_rebuilt_from_the_changes_the_diagnosis_applied",
    "tests/steps/test_multidevice.py::test_tensorflow_mirrored_strategy_a_step_and_a_keras_model_fed_per_replica",
    "tests/test_baseline.py::test_baseline_runs_on_the_cpu_with_each_keras_backend",
    "tests/test_baseline.py::test_a_mixed_precision_baseline_runs_on_the_cpu_with_a_note",
    "tests/test_baseline.py::test_the_reference_model_is_built_under_the_precision_and_the_policy_put_back",
    "tests/commands/test_sweep.py::test_the_model_builder_is_called_under_the_policy_and_the_policy_put_back",
    "tests/commands/test_sweep.py::test_a_sweep_under_mixed_bfloat16_records_it_on_the_cpu",
    "tests/test_environment.py::test_env_json_lists_every_item",
)
# What a test module may import at module level only if it is listed above: TensorFlow, Keras,
# pipediag's TensorFlow backend, and the fixtures that build tf.data pipelines.
_TF_IMPORTS = ("tensorflow", "keras", "tensorflow_datasets", "pipediag.backends.tf", "pipediag.backends.tfds",
               "tests.fixtures.pipelines", "tests.fixtures.frameworks", "tests.fixtures.bad_inputs",
               "tests.fixtures.patch_builders")
HAVE_TF = importlib.util.find_spec("tensorflow") is not None

# As in the command's own process (cli.main): once pipediag imports TensorFlow, the objects that
# import made are frozen (pipediag.backends), so the collector's full collections in this long
# process stop walking them. Over tests/api/test_diagnose.py (2-core machine, 2026-12-05, one run
# each) its full collections went from 14 taking 1.53 s to 15 taking 0.59 s: pauses of a tenth of a
# second and more that could land in the timed windows of tests that assert on real pipelines.
backends.freeze_imported_objects = True
_TF_MISSING = "needs TensorFlow, which is not installed (pip install -e '.[test]')"


def _relative(path) -> str:
    return os.path.relpath(str(path), ROOT).replace(os.sep, "/")


def _listed(rel: str, name: str | None = None) -> bool:
    """Whether a module (name None) or one test of it is in TF_TESTS."""
    for entry in TF_TESTS:
        where, _, test = entry.partition("::")
        if rel != where and not rel.startswith(where.rstrip("/") + "/"):
            continue
        if not test or (name is not None and name.split("[")[0] == test):
            return True
    return False


def _module_level_tf_import(path) -> str | None:
    """The first TensorFlow import at a module's top level (including `pytest.importorskip`), or None."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), str(path))
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [call.args[0].value for call in ast.walk(node)
                     if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                     and call.func.attr == "importorskip" and call.args and isinstance(call.args[0], ast.Constant)]
        for name in names:
            if any(name == t or name.startswith(t + ".") for t in _TF_IMPORTS):
                return name
    return None


def pytest_configure(config):
    # A shell that starts pytest in the background (`cmd &`, nohup, some CI runners) hands it SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler. The Ctrl-C tests send SIGINT to
    # this process and to pipediag subprocesses, which would inherit the ignoring: give both Ctrl-C back.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    alone.configure(config)


@pytest.hookimpl(tryfirst=True)
def pytest_make_collect_report(collector):
    """A test module that imports TensorFlow at its top level must be listed in TF_TESTS (else it would
    break collection where TensorFlow is missing); a listed one is skipped there, with the reason."""
    if not isinstance(collector, pytest.Module):
        return None
    rel = _relative(collector.path)
    if _listed(rel):
        if HAVE_TF:
            return None
        return pytest.CollectReport(collector.nodeid, "skipped", (str(collector.path), None, f"Skipped: {_TF_MISSING}"),
                                    [])
    name = _module_level_tf_import(collector.path)
    if name is None:
        return None
    return pytest.CollectReport(collector.nodeid, "failed",
                                f"{rel} imports {name} at module level but is not in TF_TESTS (tests/conftest.py).\n"
                                "HINT: add it there, so it is marked `tf` and skipped where TensorFlow is missing.", [])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Where TensorFlow is missing, a test that is not marked `tf` and fails for want of it says how to mark it."""
    outcome = yield
    report = outcome.get_result()
    if (report.failed and call.excinfo is not None and call.excinfo.errisinstance(ModuleNotFoundError)
            and (call.excinfo.value.name or "").split(".")[0] in ("tensorflow", "keras", "tensorflow_datasets")):
        report.sections.append(("tf marker", f"{item.nodeid} needs TensorFlow but is not marked `tf`. HINT: add it to "
                                             "TF_TESTS in tests/conftest.py."))


def pytest_collection_modifyitems(config, items):
    alone.alone_first(items)
    for item in items:
        if _listed(_relative(item.path), item.name):
            item.add_marker(pytest.mark.tf)
            if not HAVE_TF:
                item.add_marker(pytest.mark.skip(reason=_TF_MISSING))
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    reason = _nvml_gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs an NVIDIA GPU with NVML: {reason}")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_global_tf_seed_leaks():
    """A test that sets TensorFlow's global seed (to compare two pipelines' random crops) must not
    hand it to the next: with a global seed, two element-wise runs of a random map draw the same
    numbers, and the per-element check then refuses what it should accept (an order-dependent
    failure seen when test_decode_crop_across.py ran before test_tuning.py)."""
    yield
    tf = sys.modules.get("tensorflow")
    if tf is not None and hasattr(tf, "random"):
        tf.random.set_seed(None)
