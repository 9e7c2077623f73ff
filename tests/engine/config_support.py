"""A config field that exists only in tests, to show every artefact follows the spec."""

from __future__ import annotations

import dataclasses

import pytest

from reduction_app.engine import (
    CONFIG_FIELDS,
    ConfigField,
    ConfigKnob,
    ReductionConfig,
    config_spec,
)
from reduction_app.engine import config as config_module

EXTRA = ConfigField(
    name="clear_extra_rounds",
    kind="int",
    default=3,
    help="A field that exists only in tests.",
    zero_means_default=True,
    minimum=0,
    knob=ConfigKnob(order=4, low=0, step=1, high=10),
)


@dataclasses.dataclass(kw_only=True)
class ExtendedConfig(ReductionConfig):
    """``ReductionConfig`` with :data:`EXTRA`: the engine code that goes with the spec."""

    clear_extra_rounds: int = 3


def inject_extra_field(monkeypatch: pytest.MonkeyPatch) -> ConfigField:
    """:data:`EXTRA` added to the spec, and to the dataclass the engine builds."""
    monkeypatch.setattr(config_spec, "CONFIG_FIELDS", (*CONFIG_FIELDS, EXTRA))
    monkeypatch.setattr(config_module, "ReductionConfig", ExtendedConfig)
    return EXTRA
