"""Ids sort by creation time and carry 64 bits nobody can guess."""

from __future__ import annotations

import itertools
import os
import threading
import time

import pytest

from distill.ids import ID_LENGTH, ID_PREFIX_RE, new_id

RANDOM_HEX = 16  # the last 16 hex characters: 64 random bits


def test_ids_are_32_lower_case_hex_characters_and_all_distinct() -> None:
    made = [new_id() for _ in range(20_000)]
    assert len(set(made)) == len(made)
    assert all(len(i) == ID_LENGTH and ID_PREFIX_RE.fullmatch(i) for i in made)


def test_ids_sort_in_the_order_they_were_made() -> None:
    made = []
    for _ in range(5):
        made.extend(new_id() for _ in range(500))
        time.sleep(0.002)
    assert made == sorted(made)


def test_the_random_part_differs_in_every_bit_and_says_nothing_of_the_next() -> None:
    """Consecutive ids of one process share time and counter but not their last 64 bits: each
    bit is set in about half of them, and no id's random part follows from the one before."""
    made = [new_id() for _ in range(4_000)]
    tails = [int(i[-RANDOM_HEX:], 16) for i in made]
    assert len(set(tails)) == len(tails)
    for bit in range(64):
        share = sum(t >> bit & 1 for t in tails) / len(tails)
        assert 0.42 < share < 0.58, f"bit {bit} set in {share:.0%} of ids"
    # Not a counter in disguise: the step between neighbours is all over the place.
    steps = {(b - a) % 2**64 for a, b in itertools.pairwise(tails)}
    assert len(steps) > len(tails) * 0.99


def test_threads_never_share_a_random_part() -> None:
    """The random parts are read from the system in batches and each handed out once."""
    made: list[list[str]] = [[] for _ in range(4)]

    def make(into: list[str]) -> None:
        into.extend(new_id() for _ in range(5_000))

    workers = [threading.Thread(target=make, args=(m,)) for m in made]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    tails = [i[-RANDOM_HEX:] for m in made for i in m]
    assert len(set(tails)) == len(tails) == 20_000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_forked_child_does_not_hand_out_its_parents_random_parts() -> None:
    new_id()  # the parent holds a batch of unread random parts now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        os.write(write, "".join(new_id()[-RANDOM_HEX:] for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    child = {text[i : i + RANDOM_HEX] for i in range(0, len(text), RANDOM_HEX)}
    parent = {new_id()[-RANDOM_HEX:] for _ in range(50)}
    assert len(child) == 50
    assert not child & parent
