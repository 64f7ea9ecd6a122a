"""How the split-graph kernels spread and bound their work: edges, not only vertices,
over the grid, so that a hub's list is cut over many warps (launch shapes, and the CPU
references that describe which kernel walks which list), traversals over hubs that take
the cut equal SciPy, and level rows written only for lanes that are read back."""

from __future__ import annotations

import numpy as np
import pytest
from partition_shapes import hub_graph, reference_rows, split_limit

import vyre_async as va
from vyre_async.algorithms.msbfs import (
    MSBFS_PART_KERNELS,
    _part_layout,
    msbfs_hub_min_degree,
    run_parted_traversals,
)
from vyre_async.algorithms.msbfs import _part_reference as msbfs_part
from vyre_async.algorithms.pagerank import _part_kernels as pagerank_part
from vyre_async.algorithms.pagerank._part_state import PART_GATHER_CHUNK

_KERNELS = {k.name: k for k in MSBFS_PART_KERNELS}


def test_split_pagerank_gather_gives_a_hubs_in_list_many_warps() -> None:
    """pr_part_gather launches a warp per PART_GATHER_CHUNK in-edges: one vertex with
    2**20 in-edges gets 1,024 warps, not one thread."""
    edges = 1 << 20
    shape = pagerank_part.pr_part_gather.launch({"nr": 1, "v1": 2, "ein": edges, "gl": 4})
    warps = shape.grid[0] * shape.threads_per_block // 32
    assert warps == edges // PART_GATHER_CHUNK


@pytest.mark.parametrize(
    ("name", "edges"), [("msbfs_part_push_hubs", "e"), ("msbfs_part_pull_hubs", "ein")]
)
def test_split_traversal_hub_kernels_give_a_hubs_list_many_warps(name: str, edges: str) -> None:
    """The hub kernels launch a warp per chunk of the smallest hub degree: one vertex
    with 2**20 edges gets a warp per msbfs_hub_min_degree(16) of them."""
    count = 1 << 20
    shape = _KERNELS[name].launch({"v1": 2, "lw": 16, "gw": 16, edges: count})
    warps = shape.grid[0] * shape.threads_per_block // 32
    assert warps == count // msbfs_hub_min_degree(16)


def test_split_count_gives_each_word_of_1024_vertices_a_warp() -> None:
    """msbfs_part_count launches a warp per task (one word of 1,024 local vertices, as
    one device's msbfs_count): 10,000 vertices of 16 words make 10 * 16 warps."""
    shape = _KERNELS["msbfs_part_count"].launch({"v1": 10_001, "lw": 160_000, "lanes": 1024})
    warps = shape.grid[0] * shape.threads_per_block // 32
    assert warps == 10 * 16


def _one_part(
    n: int, words: int, direction: int
) -> tuple[dict[str, np.ndarray], dict[str, np.generic]]:
    """Buffers and scalars of a split over one device, frontier and state cleared."""
    state = np.zeros(_part_layout.PSTATE_WORDS, np.int32)
    state[_part_layout.PSTATE_DIRECTION] = direction
    state[_part_layout.PSTATE_ACTIVE : _part_layout.PSTATE_ACTIVE + 2 * words] = -1  # all lanes
    state[_part_layout.PSTATE_LIVE : _part_layout.PSTATE_LIVE + 2 * words] = -1  # all live
    arrays = {
        "recv": np.zeros(n * words, np.uint64),
        "send": np.zeros(n * words, np.uint64),
        "visited": np.zeros(n * words, np.uint64),
        "next": np.zeros(n * words, np.uint64),
        "state": state,
    }
    scalars: dict[str, np.generic] = {
        "parts": np.int32(1),
        "part": np.int32(0),
        "chunk": np.int64(n),
        "words": np.int32(words),
        "n_total": np.int64(n),
        "n1": np.int64(n + 1),
    }
    return arrays, scalars


def _star(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets and indices of lists where vertex 0 links to every other vertex and the
    others' are empty (bound as out-lists or as in-lists)."""
    offsets = np.full(n + 1, n - 1, np.int64)
    offsets[0] = 0
    return offsets, np.arange(1, n, dtype=np.int32)


def test_split_push_leaves_a_hubs_out_list_to_the_hub_kernel() -> None:
    """Top-down, msbfs_part_push skips a vertex of hub out-degree; msbfs_part_push_hubs
    ors its frontier word into every out-neighbour's outbox word."""
    words = 1
    n = msbfs_hub_min_degree(words) + 2
    arrays, scalars = _one_part(n, words, _part_layout.TOP_DOWN)
    arrays["offsets"], arrays["indices"] = _star(n)
    arrays["recv"][0] = 0b101
    msbfs_part.msbfs_part_push_reference(arrays, scalars)
    assert not arrays["send"].any()
    msbfs_part.msbfs_part_push_hubs_reference(arrays, scalars)
    assert arrays["send"][0] == 0
    assert (arrays["send"][1:] == 0b101).all()


def test_split_pull_leaves_a_hubs_in_list_to_the_hub_kernel() -> None:
    """Bottom-up, msbfs_part_pull leaves a hub's next word; msbfs_part_pull_hubs ors in
    the lanes its in-neighbours' frontier words hold."""
    words = 1
    n = msbfs_hub_min_degree(words) + 2
    arrays, scalars = _one_part(n, words, _part_layout.BOTTOM_UP)
    arrays["in_offsets"], arrays["in_indices"] = _star(n)
    arrays["recv"][n - 1] = 0b110
    arrays["visited"][0] = 0b010
    msbfs_part.msbfs_part_pull_reference(arrays, scalars)
    assert not arrays["next"].any()
    msbfs_part.msbfs_part_pull_hubs_reference(arrays, scalars)
    assert arrays["next"][0] == 0b100
    assert not arrays["next"][1:].any()


@pytest.mark.parametrize("direction", ["top_down", "bottom_up", "auto"])
@pytest.mark.parametrize("queries", [3, 130])
async def test_split_traversal_over_hubs_equals_scipy(
    direction: str, queries: int, rng: np.random.Generator
) -> None:
    """Hubs whose lists span several hub chunks (one word: 8,192 edges a chunk; three
    words: 2,048), one on each of two devices: every level equals SciPy's."""
    graph = hub_graph(rng)
    n = graph.num_vertices
    sources = rng.integers(0, n, queries).astype(np.int32)
    async with (
        va.open_devices("cpu", devices=[0, 1], memory_limit=split_limit(graph, 2)) as group,
        va.resident_graph(group, graph) as session,
    ):
        partition = session._partition
        assert partition is not None
        rows = await run_parted_traversals(
            partition,
            sources,
            max_level=2**31 - 1,
            readback="levels",
            direction=direction,  # type: ignore[arg-type]
        )
    np.testing.assert_array_equal(rows, reference_rows(graph, sources))


def test_split_init_levels_fills_only_the_rows_of_lanes_with_a_source() -> None:
    """msbfs_part_init_levels writes -1 (0 at the source) in the rows of lanes with a
    valid source and leaves the other lanes' rows, never read back, as they are."""
    nd, lanes = 6, 64
    state = np.zeros(_part_layout.PSTATE_WORDS, np.int32)
    state[_part_layout.PSTATE_ACTIVE] = 0b101  # lanes 0 and 2
    sources = np.full(lanes, -1, np.int32)
    sources[[0, 2]] = [9, 3]  # part 1 of chunk 6 owns vertices 6..11: lane 2's is not
    levels = np.full(lanes * nd, 7, np.int32)
    arrays = {"sources": sources, "levels": levels, "state": state, "offsets": np.zeros(nd + 1)}
    scalars: dict[str, np.generic] = {
        "part": np.int32(1),
        "chunk": np.int64(nd),
        "n_total": np.int64(2 * nd),
        "n1": np.int64(nd + 1),
        "lanes": np.int32(lanes),
    }
    msbfs_part.msbfs_part_init_levels_reference(arrays, scalars)
    rows = levels.reshape(lanes, nd)
    np.testing.assert_array_equal(rows[0], [-1, -1, -1, 0, -1, -1])
    np.testing.assert_array_equal(rows[2], [-1] * nd)
    assert (rows[[1, *range(3, lanes)]] == 7).all()


def _lanes(*lanes: int) -> np.uint64:
    return np.uint64(sum(1 << lane for lane in lanes))


def test_split_pull_looks_only_for_live_lanes() -> None:
    """Bottom-up, a lane no device gained a vertex in the last level (its source
    isolated, or its traversal over) is not looked for: an in-neighbour's frontier bits
    of such a lane do not reach next, so no in-list is scanned for it."""
    words = 1
    n = 3
    arrays, scalars = _one_part(n, words, _part_layout.BOTTOM_UP)
    arrays["in_offsets"] = np.array([0, 1, 1, 1], np.int64)  # vertex 0 <- vertex 2
    arrays["in_indices"] = np.array([2], np.int32)
    live = arrays["state"][_part_layout.PSTATE_LIVE :].view(np.uint64)
    live[0] = _lanes(0, 2)
    arrays["recv"][2] = _lanes(0, 1, 2)
    msbfs_part.msbfs_part_pull_reference(arrays, scalars)
    assert arrays["next"][0] == _lanes(0, 2)


def test_split_advance_reports_the_lanes_each_word_gained() -> None:
    """msbfs_part_advance ors each word's discovered lanes into the statistics' gained
    words, beside the frontier counts."""
    words, n = 2, 4
    arrays, scalars = _one_part(n, words, _part_layout.BOTTOM_UP)
    arrays["offsets"] = arrays["in_offsets"] = np.zeros(n + 1, np.int64)
    arrays["stats_out"] = np.zeros(_part_layout.PART_STATS, np.uint64)
    arrays["next"][[0, 2 * 2 + 1, 3 * 2]] = [_lanes(3), _lanes(63), _lanes(5)]
    msbfs_part.msbfs_part_advance_reference(arrays, scalars)
    gained = arrays["stats_out"][_part_layout.STAT_GAINED :]
    assert gained[0] == _lanes(3, 5)
    assert gained[1] == _lanes(63)
    assert not gained[2:].any()
    assert arrays["stats_out"][_part_layout.STAT_FRONTIER] == 3  # vertices 0, 2 and 3


def test_split_direction_makes_the_lanes_any_device_gained_live() -> None:
    """The direction step after a level makes live exactly the active lanes that some
    device (its own statistics or a copy of another's) gained in it."""
    state = np.zeros(_part_layout.PSTATE_WORDS, np.int32)
    state[_part_layout.PSTATE_PENDING] = 1
    state[_part_layout.PSTATE_MAX_LEVEL] = 100
    state[_part_layout.PSTATE_ACTIVE :].view(np.uint64)[:2] = [_lanes(0, 1, 2, 7), _lanes(4)]
    state[_part_layout.PSTATE_LIVE :].view(np.uint64)[:2] = [_lanes(0, 1, 2, 7), _lanes(4)]
    stride = _part_layout.PART_STATS
    stats = np.zeros(2 * stride, np.uint64)
    stats[stride + _part_layout.STAT_FRONTIER] = 1
    stats[stride + _part_layout.STAT_GAINED] = _lanes(2)
    stats[stride + _part_layout.STAT_GAINED + 1] = _lanes(4)
    own = np.zeros(stride, np.uint64)
    own[_part_layout.STAT_FRONTIER] = 1
    own[_part_layout.STAT_GAINED] = _lanes(0)
    arrays = {"stats": stats, "stats_out": own, "state": state}
    scalars: dict[str, np.generic] = {
        "parts": np.int32(2),
        "part": np.int32(0),
        "n_total": np.int64(10),
        "mode": np.int32(0),
    }
    msbfs_part.msbfs_part_direction_reference(arrays, scalars)
    live = state[_part_layout.PSTATE_LIVE :].view(np.uint64)
    assert live[0] == _lanes(0, 2)
    assert live[1] == _lanes(4)
    assert not live[2:16].any()
    assert not state[_part_layout.PSTATE_DONE]


@pytest.mark.parametrize(
    ("words", "direction"), [(1, _part_layout.BOTTOM_UP), (16, _part_layout.TOP_DOWN)]
)
def test_split_direction_weighs_unexplored_edges_by_the_sectors_a_scan_reads(
    words: int, direction: int
) -> None:
    """After a top-down level whose frontier has 100 out-edges against 1,000 unexplored
    in-edges, one lane word turns bottom-up (100 * 14 > 1,000, Beamer's rule) while 16
    words stay top-down: a bottom-up scan would read 4 sectors per in-edge."""
    state = np.zeros(_part_layout.PSTATE_WORDS, np.int32)
    state[_part_layout.PSTATE_MAX_LEVEL] = 100
    state[_part_layout.PSTATE_WIDTH] = words
    state[_part_layout.PSTATE_DIRECTION] = _part_layout.TOP_DOWN
    own = np.zeros(_part_layout.PART_STATS, np.uint64)
    own[_part_layout.STAT_FRONTIER] = 10
    own[_part_layout.STAT_FRONTIER_EDGES] = 100
    own[_part_layout.STAT_UNEXPLORED_EDGES] = 1000
    arrays = {
        "stats": np.zeros(_part_layout.PART_STATS, np.uint64),
        "stats_out": own,
        "state": state,
    }
    scalars: dict[str, np.generic] = {
        "parts": np.int32(1),
        "part": np.int32(0),
        "n_total": np.int64(10_000),
        "mode": np.int32(0),
    }
    msbfs_part.msbfs_part_direction_reference(arrays, scalars)
    assert state[_part_layout.PSTATE_DIRECTION] == direction


@pytest.mark.parametrize("kernel", ["pull", "merge"])
def test_split_pull_and_merge_store_only_the_next_words_that_found_a_lane(kernel: str) -> None:
    """next is zero at a level's start (advance clears each word it takes), so the pull
    (bottom-up) and the merge (top-down) store only the words that found a lane: a word
    that found none keeps what it holds (here a marker), one that found some gets them."""
    words, n, marker = 1, 3, np.uint64(1 << 40)
    direction = _part_layout.BOTTOM_UP if kernel == "pull" else _part_layout.TOP_DOWN
    arrays, scalars = _one_part(n, words, direction)
    arrays["offsets"] = arrays["in_offsets"] = np.array([0, 1, 1, 1], np.int64)
    arrays["in_indices"] = np.array([2], np.int32)  # vertex 0 <- vertex 2
    arrays["recv"][2] = _lanes(5)  # pull: vertex 2's frontier
    arrays["send"][0] = _lanes(5)  # merge: vertex 0 discovered in the own outbox
    arrays["next"][:] = [0, marker, marker]
    reference = getattr(msbfs_part, f"msbfs_part_{kernel}_reference")
    reference(arrays, scalars)
    assert arrays["next"].tolist() == [_lanes(5), marker, marker]
