"""The patches `pipediag run` puts in before the script starts, and takes out after it.

- `tf.data.Dataset.__init__`: every dataset's construction site (run.site), taken when it is made.
- `tf.data.Dataset.__iter__`: an iterator the *script* makes (`for`, `iter`, `enumerate`, `zip`)
  comes back wrapped in a `Tap`, whose `__next__` goes through the session (timed, or swapped
  during a window). Iterators that Keras or TensorFlow make for themselves are left alone: they
  may be handed to a tf.function.
- `Strategy.experimental_distribute_dataset` and `distribute_datasets_from_function`: the
  distributed dataset remembers its source dataset and strategy; its class's `__iter__` is
  wrapped the same way.
- Keras 3 `Model.fit` (run.fit).
"""

from __future__ import annotations

from typing import Any

from pipediag.backends.tf import tf
from pipediag.run.observe import DISTRIBUTED, FROM_FUNCTION, LOOP
from pipediag.run.site import called_from_user, user_site


class Tap:
    """A script's iterator over a dataset, its batches taken through the session."""

    def __init__(self, session, source, iterator: Any):
        self._session, self._source, self._iterator = session, source, iterator

    def __iter__(self) -> Tap:
        return self

    def __next__(self) -> Any:
        return self._session.take(self._source, self._iterator.__next__)

    def get_next(self) -> Any:
        try:
            return next(self)
        except StopIteration:
            raise tf.errors.OutOfRangeError(None, None, "End of sequence") from None

    def __getattr__(self, name: str) -> Any:  # element_spec, get_next_as_optional, ...
        return getattr(self._iterator, name)


def _defining_class(cls: type, name: str) -> type:
    return next(c for c in cls.__mro__ if name in c.__dict__)


class Hooks:
    """Install with `install()`, remove with `uninstall()` (every patch put back as it was)."""

    def __init__(self, session):
        self.session = session
        self._saved: list[tuple[type, str, Any]] = []
        self._distributed: dict[int, tuple[Any, Any, str, Any]] = {}  # id -> (dist, dataset, kind, strategy)

    def _patch(self, cls: type, name: str, make) -> None:
        original = cls.__dict__[name]
        self._saved.append((cls, name, original))
        setattr(cls, name, make(original))

    def install(self) -> None:
        dataset_cls = tf.data.Dataset
        self._patch(dataset_cls, "__init__", self._init_hook)
        self._patch(dataset_cls, "__iter__", self._iter_hook)
        strategy_cls = _defining_class(tf.distribute.Strategy, "experimental_distribute_dataset")
        self._patch(strategy_cls, "experimental_distribute_dataset", self._distribute_hook)
        strategy_cls = _defining_class(tf.distribute.Strategy, "distribute_datasets_from_function")
        self._patch(strategy_cls, "distribute_datasets_from_function", self._from_function_hook)
        from pipediag.run.fit import fit_hook, model_class

        self._patch(model_class(), "fit", lambda original: fit_hook(self.session, original))

    def uninstall(self) -> None:
        while self._saved:
            cls, name, original = self._saved.pop()
            setattr(cls, name, original)

    # -- the hooks -------------------------------------------------------------------------------
    def _init_hook(self, original):
        sites = self.session.sites

        def recording_init(dataset, *args, **kwargs):
            original(dataset, *args, **kwargs)
            sites.record(dataset, user_site(2))

        return recording_init

    def _iter_hook(self, original):
        session = self.session

        def tapped_iter(dataset):
            t0 = session.clock_ns()
            iterator = original(dataset)
            if not called_from_user(2):
                return iterator
            return session.tap(session.source_for(dataset, LOOP, made_ns=session.clock_ns() - t0), iterator)

        return tapped_iter

    def _distribute_hook(self, original):
        def experimental_distribute_dataset(strategy, dataset, *args, **kwargs):
            result = original(strategy, dataset, *args, **kwargs)
            if result is not dataset:
                self._remember(result, dataset, DISTRIBUTED, strategy)
            return result

        return experimental_distribute_dataset

    def _from_function_hook(self, original):
        def distribute_datasets_from_function(strategy, dataset_fn, *args, **kwargs):
            made: list = []

            def recording(context):
                dataset = dataset_fn(context)
                made.append(dataset)
                return dataset

            result = original(strategy, recording, *args, **kwargs)
            if made:
                self._remember(result, made[0], FROM_FUNCTION, strategy)
            return result

        return distribute_datasets_from_function

    def _remember(self, distributed: Any, dataset: Any, kind: str, strategy: Any) -> None:
        self._distributed[id(distributed)] = (distributed, dataset, kind, strategy)
        cls = type(distributed)
        if any(saved_cls is cls and name == "__iter__" for saved_cls, name, _ in self._saved):
            return
        if "__iter__" not in cls.__dict__:
            return
        session, known = self.session, self._distributed

        def make(original):
            def tapped_distributed_iter(dist):
                t0 = session.clock_ns()
                iterator = original(dist)
                entry = known.get(id(dist))
                if entry is None or entry[0] is not dist or not called_from_user(2):
                    return iterator
                _, source_dataset, how, chosen = entry
                return session.tap(session.source_for(source_dataset, how, strategy=chosen,
                                                      made_ns=session.clock_ns() - t0), iterator)

            return tapped_distributed_iter

        self._patch(cls, "__iter__", make)
