from __future__ import annotations

from context.fill import Ledger, Pick, Pool


def test_ledger_cedes_what_the_first_pass_left() -> None:
    ledger = Ledger("facts", budget=100, received=30)
    ledger.used = 90
    assert ledger.allowance == 130
    assert ledger.close_first_pass() == 40
    assert ledger.freeze().ceded == 40


def test_pool_skips_what_does_not_fit_and_charges_the_header_once() -> None:
    ledger = Ledger("facts", budget=0)
    pool = Pool(ledger, "fact", header_cost=5, costs=(10, 50, 3, 4))
    picks: list[Pick] = []
    used = pool.fill(22, picks, second_pass=False)
    assert pool.chosen == {0, 2, 3}
    assert used == ledger.used == 5 + 10 + 3 + 4
    assert [p.cost for p in picks] == [15, 3, 4]


def test_second_pass_adds_to_granted_only() -> None:
    ledger = Ledger("facts", budget=20)
    pool = Pool(ledger, "fact", header_cost=2, costs=(10, 30))
    picks: list[Pick] = []
    pool.fill(20, picks, second_pass=False)
    granted = pool.fill(100, picks, second_pass=True)
    assert granted == 30 and ledger.granted == 30 and ledger.used == 42
    assert picks[-1] == Pick("fact", 1, 30, second_pass=True)


def test_give_back_undoes_a_pick() -> None:
    ledger = Ledger("summaries", budget=0)
    pool = Pool(ledger, "summary", header_cost=2, costs=(10, 30))
    picks: list[Pick] = []
    pool.fill(100, picks, second_pass=True)
    pool.give_back(picks.pop())
    assert pool.chosen == {0}
    assert (ledger.used, ledger.granted) == (12, 12)
    pool.give_back(picks.pop())
    assert pool.chosen == set() and (ledger.used, ledger.granted) == (0, 0)
