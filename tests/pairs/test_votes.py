"""Issue 18, the panel's rules on one pair, read alone (docs/grading.md, "How the panel calls a pair")."""

from __future__ import annotations

from assay.pairs.votes import Call, SeatVote, majority, panel_call, settle

YES_NO = Call({"baseline": True, "candidate": False}, "baseline")
NO_YES = Call({"baseline": False, "candidate": True}, "candidate")
ARMS_FAMILIES = ("claude", "openai")


def vote(seat: str, family: str, call: Call, model: str | None = None) -> SeatVote:
    return SeatVote(seat, family, model or seat, call)


def test_a_call_that_flips_with_the_order_is_a_tie():
    """Spec: 'A call that flips with the order is a tie' — question by question."""
    flipped = Call({"baseline": True, "candidate": True}, "candidate")
    assert settle(YES_NO, flipped) == Call({"baseline": True, "candidate": None}, None)
    assert settle(YES_NO, YES_NO) == YES_NO


def test_strict_majority_else_a_tie():
    """Spec: 'strict majority, else tie' — a tie never wins, and half is not a majority."""
    assert majority([True, True, False]) is True
    assert majority([True, False]) is None
    assert majority([True, None, None]) is None
    assert majority([]) is None


def test_arm_family_seats_sit_out_while_another_family_votes():
    """Spec: 'arm-family seats sit out while another family votes'; alone, they vote."""
    votes = [vote("c", "claude", NO_YES), vote("k", "kimi", YES_NO)]
    on = panel_call(votes, ARMS_FAMILIES)
    assert on.call == YES_NO and on.voters == ("k",) and on.sat_out == ("c",)
    alone = panel_call([votes[0]], ARMS_FAMILIES)
    assert alone.call == NO_YES and alone.sat_out == ()
    off = panel_call(votes, ARMS_FAMILIES, arm_family_rule=False)
    assert off.call == Call({"baseline": None, "candidate": None}, None)
    assert not off.call.ready("baseline"), "a tied merge call is not ready"


def test_ballots_per_family_or_per_model():
    """Spec: '--panel-vote family|model': a family's seats first take their own majority."""
    votes = [vote("k1", "kimi", NO_YES), vote("k2", "kimi", NO_YES), vote("k3", "kimi", NO_YES),
             vote("g", "gemini", YES_NO), vote("q", "qwen", YES_NO)]
    assert panel_call(votes, ARMS_FAMILIES, vote="family").call == YES_NO
    assert panel_call(votes, ARMS_FAMILIES, vote="model").call == NO_YES
    same_model = [vote("a", "kimi", NO_YES, "kimi-k2"), vote("b", "kimi", YES_NO, "kimi-k2"),
                  vote("g", "gemini", YES_NO)]
    assert panel_call(same_model, ARMS_FAMILIES, vote="model").call.merge["baseline"] is None
