"""Tolerances for numbers worked out by hand."""
import pytest


def approx_j(value):
    """pytest.approx for an energy (J) or a power (W) worked out by hand: relative only, since
    approx's default absolute tolerance of 1e-12 would take any value within a picojoule of the
    expected one (a wake-up costs 0.45 pJ, a tag lookup 0.57)."""
    return pytest.approx(value, rel=1e-9, abs=0)
