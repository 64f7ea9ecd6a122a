"""The NetworkX backend: NetworkX's own answers, the conversion cache, the event loop.

NetworkX's own test modules run against the backend too (``NETWORKX_TEST_BACKEND``,
in a child process): ``test_networkx_own_tests_pass_against_the_backend``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

nx = pytest.importorskip("networkx")

import vyre_async.networkx as vx  # noqa: E402  (after the skip where NetworkX is missing)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _quiet_cache_note() -> Iterator[None]:
    """NetworkX notes every use of a cached conversion in a warning: the cache is what
    these tests check, so the note is silenced here (users may do the same)."""
    ignored = set(nx.config.warnings_to_ignore)
    nx.config.warnings_to_ignore.add("cache")
    yield
    nx.config.warnings_to_ignore = ignored


def _random_graph(rng: np.random.Generator, *, directed: bool) -> object:
    """A random graph with string labels, self loops, isolated nodes and weights."""
    n = int(rng.integers(30, 80))
    graph = nx.DiGraph() if directed else nx.Graph()
    labels = [f"v{int(i)}" for i in rng.permutation(n)]
    graph.add_nodes_from(labels)
    for _ in range(int(rng.integers(n, 4 * n))):
        u, v = rng.integers(0, n, 2)
        graph.add_edge(labels[u], labels[v], weight=int(rng.integers(1, 9)))
    for u in rng.choice(n, 3, replace=False):
        graph.add_edge(labels[u], labels[u], weight=1)
    return graph


@pytest.mark.parametrize("directed", [False, True])
def test_results_equal_networkx_on_random_graphs(rng: np.random.Generator, directed: bool) -> None:
    """Every covered function, on a random graph with string labels, equals NetworkX."""
    graph = _random_graph(rng, directed=directed)
    nodes = list(graph)
    source, target = nodes[int(rng.integers(0, len(nodes)))], nodes[-1]
    calls = [
        lambda **b: list(nx.bfs_layers(graph, [source, target], **b)),
        lambda **b: list(nx.bfs_edges(graph, source, **b)),
        lambda **b: sorted(nx.bfs_tree(graph, source, **b).edges()),
        lambda **b: nx.descendants(graph, source, **b),
        lambda **b: nx.descendants_at_distance(graph, source, 2, **b),
        lambda **b: nx.has_path(graph, source, target, **b),
        lambda **b: nx.single_source_shortest_path_length(graph, source, **b),
        lambda **b: nx.single_source_shortest_path(graph, source, **b),
        lambda **b: nx.shortest_path_length(graph, source, **b),
        lambda **b: nx.shortest_path_length(graph, source, weight="weight", **b),
        lambda **b: nx.single_source_dijkstra_path_length(graph, source, **b),
        lambda **b: dict(nx.all_pairs_shortest_path_length(graph, **b)),
    ]
    if directed:
        calls += [
            lambda **b: list(nx.weakly_connected_components(graph, **b)),
            lambda **b: nx.number_weakly_connected_components(graph, **b),
            lambda **b: nx.is_weakly_connected(graph, **b),
        ]
    else:
        calls += [
            lambda **b: list(nx.connected_components(graph, **b)),
            lambda **b: nx.number_connected_components(graph, **b),
            lambda **b: nx.node_connected_component(graph, source, **b),
            lambda **b: nx.is_connected(graph, **b),
        ]
    for call in calls:
        assert call(backend="vyre") == call()
    ranks, want = nx.pagerank(graph, weight=None, backend="vyre"), nx.pagerank(graph, weight=None)
    assert ranks.keys() == want.keys()
    assert max(abs(ranks[n] - want[n]) for n in want) < 1e-5


@pytest.mark.parametrize("labels", ["own numbers", "shuffled numbers"])
def test_a_graph_of_integer_nodes_converts_to_its_edges(
    rng: np.random.Generator, labels: str
) -> None:
    """Nodes 0..n-1 in order (kept as their own numbers) or shuffled (renumbered): the
    CSR holds exactly the graph's edges and weights, and lengths equal NetworkX's."""
    n = int(rng.integers(40, 90))
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n) if labels == "own numbers" else rng.permutation(n).tolist())
    for u, v in rng.integers(0, n, (4 * n, 2)).tolist():
        graph.add_edge(u, v, weight=float(rng.uniform(0.5, 4.0)))
    converted = vx.convert_from_nx(graph, edge_attrs={"weight": 1.0})
    csr, nodes = converted.csr, converted.nodes
    got = {
        (nodes[u], nodes[int(v)]): float(w)
        for u in range(len(nodes))
        for v, w in zip(
            csr.indices[csr.offsets[u] : csr.offsets[u + 1]],
            csr.weights[csr.offsets[u] : csr.offsets[u + 1]],
            strict=True,
        )
    }
    want = {(u, v): np.float32(d["weight"]) for u, v, d in graph.edges(data=True)}
    assert got == want
    source = nodes[0]
    lengths = nx.single_source_dijkstra_path_length(graph, source, backend="vyre")
    expected = nx.single_source_dijkstra_path_length(graph, source)
    assert lengths.keys() == expected.keys()
    assert max(abs(lengths[v] - expected[v]) for v in expected) < 1e-4


def test_parallel_edges_convert_to_their_lightest(rng: np.random.Generator) -> None:
    """A multigraph's parallel edges become one edge of the smallest weight (a missing
    weight counting as the default), as NetworkX's shortest paths take them."""
    graph = nx.MultiDiGraph()
    n = 30
    graph.add_nodes_from(f"v{i}" for i in range(n))
    for u, v in rng.integers(0, n, (6 * n, 2)).tolist():
        if rng.random() < 0.1:
            graph.add_edge(f"v{u}", f"v{v}")  # no weight: the default 1
        else:
            graph.add_edge(f"v{u}", f"v{v}", weight=float(rng.integers(2, 9)))
    converted = vx.convert_from_nx(graph, edge_attrs={"weight": 1})
    index = {node: i for i, node in enumerate(converted.nodes)}
    csr = converted.csr
    for u, v in set(graph.edges()):
        lightest = min(d.get("weight", 1) for d in graph[u][v].values())
        row = slice(csr.offsets[index[u]], csr.offsets[index[u] + 1])
        (at,) = np.flatnonzero(csr.indices[row] == index[v])
        assert csr.weights[row][at] == lightest
    assert csr.num_edges == len(set(graph.edges()))


@pytest.mark.parametrize("bad", ["heavy", None, float("nan")])
def test_a_weight_that_is_not_a_finite_number_is_left_to_networkx(bad: object) -> None:
    """A weight of another type or NaN: the conversion declines (NotImplementedError,
    which makes NetworkX run its own code) instead of failing deep inside."""
    graph = nx.DiGraph([(0, 1, {"weight": 2.0}), (1, 2, {"weight": bad})])
    with pytest.raises(NotImplementedError, match="weight"):
        vx.convert_from_nx(graph, edge_attrs={"weight": 1})


@pytest.mark.parametrize("directed", [False, True])
def test_personalized_pagerank_equals_networkx(rng: np.random.Generator, directed: bool) -> None:
    """pagerank(personalization=...) runs on vyre and equals NetworkX's, one seed or
    random weights over some nodes (and keys that are not nodes, which both ignore);
    a directed random graph has vertices without out-edges, whose mass goes to the
    personalization in both.

    Both stop once an iteration moves the ranks by less than ``N * tol`` in L1 but
    start from different vectors, so each is within ``N * tol * alpha / (1 - alpha)``
    of the fixed point (NetworkX run to ``tol=1e-13``), not of each other."""
    graph = _random_graph(rng, directed=directed)
    nodes = list(graph)
    picked = rng.choice(len(nodes), 5, replace=False)
    weights = {nodes[int(i)]: float(rng.uniform(0.1, 3.0)) for i in picked}
    for personalization in ({nodes[int(picked[0])]: 1}, {**weights, "not a node": 5.0}):
        runs = vx.backend_interface.can_run(
            "pagerank", (graph,), {"personalization": personalization}
        )
        assert runs is True
        exact = nx.pagerank(
            graph, personalization=personalization, weight=None, tol=1e-13, max_iter=2000
        )
        near = nx.pagerank(graph, personalization=personalization, weight=None)
        ranks = dict.fromkeys(exact, -1.0)  # poisoned: every node must be written
        ranks.update(
            nx.pagerank(graph, personalization=personalization, weight=None, backend="vyre")
        )
        bound = len(graph) * 1e-6 * 0.85 / 0.15 + 1e-5  # and float32's rounding
        assert ranks.keys() == exact.keys()
        assert sum(abs(near[n] - exact[n]) for n in exact) <= bound  # the bound holds
        assert sum(abs(ranks[n] - exact[n]) for n in exact) <= bound
        assert sum(ranks.values()) == pytest.approx(1.0, abs=1e-5)


def test_a_graph_converts_once_across_ten_calls_and_again_after_a_change(
    rng: np.random.Generator,
) -> None:
    """Ten calls on an unchanged graph convert it once; add_edge (which clears NetworkX's
    cache) makes the next call convert again, and see the new edge."""
    graph = _random_graph(rng, directed=True)
    source = next(iter(graph))
    before = vx.conversions()
    for _ in range(10):
        nx.single_source_shortest_path_length(graph, source, backend="vyre")
    assert vx.conversions() - before == 1
    graph.add_edge(source, "new")
    assert nx.single_source_shortest_path_length(graph, source, backend="vyre")["new"] == 1
    assert vx.conversions() - before == 2


def test_the_session_of_a_graph_that_is_gone_is_closed_at_the_next_call(
    rng: np.random.Generator,
) -> None:
    """A converted graph dropped from the cache (the graph changed) and collected: its
    resident session is closed at the next call, from the caller's thread, so sessions
    do not pile up (a finalizer may run on the loop's thread, where it must not block)."""
    import gc
    import weakref

    from vyre_async.networkx._portal import loop

    graph = _random_graph(rng, directed=False)
    source = next(iter(graph))
    nx.descendants(graph, source, backend="vyre")
    (converted,) = graph.__networkx_cache__["backends"]["vyre"].values()
    gone, token = weakref.ref(converted), converted._token
    assert token in loop._sessions
    converted.graph["cycle"] = converted  # only the cyclic collector can free it now
    del converted
    graph.add_edge(source, "new")  # NetworkX clears G.__networkx_cache__

    async def collect() -> None:  # the finalizer runs on the loop's own thread
        gc.collect()

    loop.call(collect)
    assert gone() is None
    assert nx.descendants(graph, source, backend="vyre") == nx.descendants(graph, source)
    assert token not in loop._sessions  # closed; the changed graph's session is open
    assert len(loop._sessions) >= 1


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_a_call_from_inside_a_running_event_loop_works(loop: str) -> None:
    """A NetworkX call made directly in a coroutine (asyncio, trio) runs on the backend's
    own loop and returns, without deadlocking the caller's (a child process: the call
    blocks the caller's loop while it runs, which this suite's async tests forbid)."""
    code = (
        "import anyio, networkx as nx\n"
        "G = nx.gnp_random_graph(60, 0.05, seed=4, directed=True)\n"
        "async def main():\n"
        "    got = nx.single_source_shortest_path_length(G, 0, backend='vyre')\n"
        "    assert got == nx.single_source_shortest_path_length(G, 0)\n"
        "    await anyio.sleep(0)\n"
        "    print('ok', len(got))\n"
        f"anyio.run(main, backend={loop!r})\n"
    )
    env = {**os.environ, "VYRE_ASYNC_NX_BACKEND": "cpu"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(  # noqa: S603 - this interpreter
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("ok")


def test_unsupported_arguments_are_left_to_networkx(rng: np.random.Generator) -> None:
    """A weight function, sort_neighbors or a personalization: can_run says why not."""
    interface = vx.backend_interface
    graph = _random_graph(rng, directed=True)
    source = next(iter(graph))
    reason = interface.can_run(
        "single_source_dijkstra_path_length", (graph, source), {"weight": lambda u, v, d: 1}
    )
    assert isinstance(reason, str)
    assert "weight function" in reason
    assert isinstance(
        interface.can_run("bfs_edges", (graph, source), {"sort_neighbors": sorted}), str
    )
    for personalization in ({source: -1.0}, {source: 0}, {"not a node": 1.0}, [source]):
        reason = interface.can_run("pagerank", (graph,), {"personalization": personalization})
        assert isinstance(reason, str)
        assert "personalization" in reason
    assert isinstance(interface.can_run("pagerank", (graph,), {"dangling": {source: 1}}), str)
    assert interface.can_run("pagerank", (graph,), {"personalization": {source: 1}}) is True
    assert interface.can_run("pagerank", (graph,), {}) is True


def test_the_backend_info_lists_every_function_the_backend_runs() -> None:
    """What NetworkX learns at start-up (``get_info``) names exactly the functions run."""
    import _vyre_async_networkx

    assert set(_vyre_async_networkx.get_info()["functions"]) == set(vx.FUNCTIONS)
    assert nx.utils.backends.backend_info["vyre"]["backend_name"] == "vyre"


def test_importing_vyre_async_does_not_import_networkx() -> None:
    """``import vyre_async`` leaves NetworkX (and this backend) unimported."""
    code = (
        "import sys, vyre_async; "
        "print('networkx' in sys.modules, 'vyre_async.networkx' in sys.modules)"
    )
    done = subprocess.run(  # noqa: S603 - this interpreter
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["False", "False"]


def test_networkx_own_tests_pass_against_the_backend(tmp_path: Path) -> None:
    """NetworkX's tests of traversal, shortest paths, components and link analysis pass
    with every call of a covered function dispatched to vyre (the rest to NetworkX)."""
    env = {
        **os.environ,
        "NETWORKX_TEST_BACKEND": "vyre",
        "NETWORKX_FALLBACK_TO_NX": "True",
        "VYRE_ASYNC_NX_BACKEND": "cpu",
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    modules = [
        "networkx.algorithms.traversal",
        "networkx.algorithms.shortest_paths",
        "networkx.algorithms.components",
        "networkx.algorithms.link_analysis",
    ]
    code = (
        "import sys, pytest\n"
        f"code = pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir', {str(tmp_path)!r}, "
        f"'--pyargs', *{modules!r}])\n"
        "import vyre_async.networkx as vx\n"
        "print('vyre conversions', vx.conversions())\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(  # noqa: S603 - this interpreter, NetworkX's tests
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    conversions = int(done.stdout.rsplit("vyre conversions", 1)[1].split()[0])
    assert conversions > 100  # the backend ran, not NetworkX alone
