"""What an Experiment's page draws from its data (assay.console.shown): pure, so tested without a run."""

from __future__ import annotations

import attrs
from assay.console import shown
from assay.storage import formats
from assay.storage.records import Bar, PanelSeat


def test_every_bar_field_is_a_setting_people_can_read():
    """Issue 32: "the Bar as a readable list of settings with their flags' names" (the page printed
    Python reprs: ``{'code-review': 3, …}``, ``True``, ``None``). A Bar field the page doesn't know
    fails here, not silently on the page."""
    assert {f.name for f in attrs.fields(Bar)} - {"format"} == {field for field, *_ in shown.BAR}
    bar = formats.unstructure(Bar(efficiency="cost", panel="beside", panel_seats=(PanelSeat("claude", "opus", "high"),),
                                  people="beside", people_readers=("ana", "bo"), panel_spending_limit=5.0,
                                  panel_agreement=0.6))
    settings = shown.bar_settings(bar)
    for s in settings:
        assert not any(r in s["value"] for r in ("{", "[", "True", "False", "None")), s
        assert s["flag"] is None or s["flag"].startswith("--")
    by = {s["field"]: s["value"] for s in settings}
    assert by["margin"] == "10 points" and by["level"] == "95 %" and by["timeout_seconds"] == "1 h 00 min"
    assert by["efficiency"] == "cost" and by["efficiency_margin"] == "10 %" and by["panel_spending_limit"] == "$5.00"
    assert by["panel_seats"] == "claude-opus-high" and by["people_readers"] == "ana, bo" and by["people_overlap"] == "every reader"
    off = {s["field"] for s in shown.bar_settings(formats.unstructure(Bar()))}
    assert not off & (shown.PANEL | shown.PEOPLE | {"efficiency", "efficiency_margin", "panel_agreement"})


def test_the_interval_sits_on_an_axis_in_points_with_zero_and_the_margin():
    """Issue 32: "the interval on a real axis in points with zero and the margin marked" (the chart
    had no axis and mixed fractions with points)."""
    c = shown.chart({"interval": [-0.04, 0.125], "verdict": "pass"}, 0.1)
    assert (c["lo_pts"], c["hi_pts"], c["margin_pts"]) == ("−4", "+12.5", "−10")
    assert 0 <= c["margin"] < c["lo"] < c["zero"] < c["hi"] <= 100
    labels = [t["label"] for t in c["ticks"]]
    assert "0" in labels and labels[0].startswith("−") and labels[-1].startswith("+")
    xs = [t["x"] for t in c["ticks"]]
    assert xs == sorted(xs) and xs[0] == 0 and xs[-1] == 100
    assert shown.chart(None, 0.1) is None and shown.chart({"interval": None, "verdict": "inconclusive"}, 0.1) is None


def test_times_and_points_read_as_people_write_them():
    assert [shown.duration(s) for s in (None, 4.4, 65, 3725)] == [None, "4 s", "1 min 05 s", "1 h 02 min"]
    assert [shown.points(v) for v in (0.0, 0.125, -1.0, 0.3333)] == ["0", "+12.5", "−100", "+33.3"]
