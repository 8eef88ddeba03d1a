"""The JSON round trip the plain records share: `to_dict` is `dataclasses.asdict`, and `from_dict`
takes the dict back, making the tuples JSON wrote as lists tuples again."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar, TypeVar

_R = TypeVar("_R", bound="DictRecord")


class DictRecord:
    """Base of a dataclass whose JSON is its fields as they are. `_tuples` names the fields that
    hold a tuple or None (JSON has only lists); a record with nested records writes its own pair."""

    _tuples: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]  # subclasses are dataclasses

    @classmethod
    def from_dict(cls: type[_R], d: dict[str, Any]) -> _R:
        return cls(**{**d, **{key: None if d.get(key) is None else tuple(d[key]) for key in cls._tuples}})


def with_tuples(d: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """A copy of `d` with each of `keys` that holds a list made a tuple again (JSON has only
    lists); a key that is absent or None is left as it is."""
    return {**d, **{key: tuple(d[key]) for key in keys if d.get(key) is not None}}
