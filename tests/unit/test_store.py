import factories
from factories import workload

from taudash.engine.model import Node, Workload
from taudash.engine.store import AccessState, Store


def node(name, **labels):
    return Node.model_validate(factories.node(name, None, os=None, labels=labels))


def test_indexes_follow_updates_and_deletes():
    s = Store()
    s.upsert(node("a", pool="x"))
    s.upsert(node("b", pool="x"))
    assert [n.name for n in s.by_label("Node", "pool", "x")] == ["a", "b"]
    s.upsert(node("a", pool="y"))  # relabel: leaves the old index entry
    assert [n.name for n in s.by_label("Node", "pool", "x")] == ["b"]
    assert [n.name for n in s.by_label("Node", "pool")] == ["a", "b"]
    assert s.delete("Node", "b") and not s.delete("Node", "b")
    assert s.by_label("Node", "pool", "x") == []
    assert s.count("Node") == 1


def test_namespace_and_owner_indexes():
    s = Store()
    s.upsert(Workload.model_validate(workload("w1", "ns1", owner=("Job", "j", "uid-j"))))
    s.upsert(Workload.model_validate(workload("w2", "ns2")))
    assert [w.name for w in s.list("Workload", "ns1")] == ["w1"]
    assert [w.name for w in s.by_owner("uid-j")] == ["w1"]
    assert s.get("Workload", "w1", "ns1") is not None and s.get("Workload", "w1", "ns2") is None
    s.delete("Workload", "w1", "ns1")
    assert s.by_owner("uid-j") == [] and s.list("Workload", "ns1") == []


def test_an_owner_of_several_objects_and_back_to_one():
    s = Store()
    for name in ("w1", "w2", "w3"):
        s.upsert(Workload.model_validate(workload(name, "ns1", owner=("Job", "j", "uid-j"))))
    s.upsert(Workload.model_validate(workload("w1", "ns1", owner=("Job", "j", "uid-j"))))  # update: no duplicate
    assert [w.name for w in s.by_owner("uid-j")] == ["w1", "w2", "w3"]
    assert [w.name for w in s.by_owner("uid-j", "Workload")] == ["w1", "w2", "w3"] and s.by_owner("uid-j", "Job") == []
    s.delete("Workload", "w2", "ns1")
    s.delete("Workload", "w3", "ns1")
    assert [w.name for w in s.by_owner("uid-j")] == ["w1"]
    s.upsert(Workload.model_validate(workload("w1", "ns1", owner=("Job", "k", "uid-k"))))  # re-owned
    assert s.by_owner("uid-j") == [] and [w.name for w in s.by_owner("uid-k")] == ["w1"]
    assert s.by_owner("nobody") == []


def test_label_lookups_on_scanned_kinds_match_the_indexed_answer():
    s = Store()

    def wl(name, ns, **labels):
        raw = workload(name, ns)
        raw["metadata"]["labels"] = labels
        return Workload.model_validate(raw)

    s.upsert(wl("w1", "ns1", job="a"))
    s.upsert(wl("w2", "ns2", job="a"))
    s.upsert(wl("w3", "ns1", job="b"))
    s.upsert(wl("w4", "ns1"))
    assert "Workload" not in {k for k, v in s._by_label.items() if v}  # not indexed: scanned
    assert [w.name for w in s.by_label("Workload", "job", "a")] == ["w1", "w2"]
    assert [w.name for w in s.by_label("Workload", "job", "a", "ns1")] == ["w1"]
    assert [w.name for w in s.by_label("Workload", "job")] == ["w1", "w3", "w2"]  # sorted by (namespace, name)
    assert s.by_label("Workload", "job", "a", "nowhere") == [] and s.by_label("Workload", "none") == []
    s.upsert(wl("w1", "ns1", job="c"))  # relabel
    assert [w.name for w in s.by_label("Workload", "job", "a")] == ["w2"]
    s.delete("Workload", "w2", "ns2")
    assert s.by_label("Workload", "job", "a") == []


def test_change_feed_and_revision():
    s = Store()
    seen = []
    s.subscribe(seen.append)
    s.upsert(node("a"))
    s.upsert(node("a"))
    s.delete("Node", "a")
    assert [c.type for c in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert s.revision == 3
    assert [c.revision for c in s.changes_since(1)] == [2, 3]
    assert s.changes_since(3) == []


def test_change_feed_reports_overflow():
    s = Store()
    s.FEED_LIMIT = 3
    from collections import deque

    s._feed = deque(maxlen=3)
    for i in range(6):
        s.upsert(node(f"n{i}"))
    assert s.changes_since(0) is None  # too far back: the consumer must re-derive everything
    assert len(s.changes_since(4)) == 2


def test_replace_is_one_reset_and_rebuilds_indexes():
    s = Store()
    s.upsert(node("old", pool="x"))
    s.replace("Node", [(node("new", pool="x"), None)])
    assert [n.name for n in s.by_label("Node", "pool", "x")] == ["new"]
    assert s.changes_since(1)[-1].type == "RESET"


def _indexes(s: Store, kinds, uids, labels) -> dict:
    """Everything the store answers through its indexes, by public reads."""
    out: dict = {}
    for kind in kinds:
        objs = s.list(kind)
        out[kind] = objs
        for ns in {o.namespace for o in objs}:
            out[(kind, ns)] = s.list(kind, ns)
        for key, value in labels:
            out[(kind, key, value)] = s.by_label(kind, key, value)
            out[(kind, key)] = s.by_label(kind, key)
        out[(kind, "raw")] = [s.raw(kind, o.name, o.namespace) for o in objs]
    for uid in uids:
        out[uid] = s.by_owner(uid)
    return out


def test_a_relist_indexes_exactly_as_upserts_do():
    """`replace` builds a kind's indexes in one batch; reads through them equal a store fed by upserts,
    including owners shared across kinds, a name listed twice (the later object stands) and raw copies."""
    shared = ("Job", "j", "uid-shared")
    wls = [Workload.model_validate(workload(f"w{i}", f"ns{i % 3}",
                                            owner=shared if i % 4 == 0 else ("Job", f"j{i}", f"uid-{i}")))
           for i in range(12)]
    wls.append(Workload.model_validate(workload("w1", "ns1", owner=("Job", "other", "uid-other"))))  # w1 again
    nodes = [node(f"n{i}", pool=f"p{i % 2}", zone="z") for i in range(5)] + [node("n0", pool="p9")]
    raws = {n.name: {"kind": "Node", "seen": i} for i, n in enumerate(nodes)}
    lq = Workload.model_validate(workload("lone", "ns0", owner=shared))  # a second kind's owner of the same uid

    batch, upserts = Store(), Store()
    for s in (batch, upserts):  # earlier content the re-list replaces
        s.upsert(Workload.model_validate(workload("stale", "ns0", owner=shared)))
        s.upsert(node("gone", pool="p0"))
    batch.replace("Workload", [(w, None) for w in wls])
    batch.replace("Node", [(n, raws[n.name]) for n in nodes])
    upserts.delete("Workload", "stale", "ns0")
    upserts.delete("Node", "gone")
    for w in wls:
        upserts.upsert(w)
    for n in nodes:
        upserts.upsert(n, raw=raws[n.name])
    uids = ["uid-shared", "uid-other", "uid-1", "uid-5"] + [f"uid-{i}" for i in range(12)]
    labels = [("pool", "p0"), ("pool", "p1"), ("pool", "p9"), ("zone", "z"), ("kueue.x-k8s.io/job-uid", "uid-shared")]
    want = _indexes(upserts, ["Workload", "Node"], uids, labels)
    assert _indexes(batch, ["Workload", "Node"], uids, labels) == want
    assert [w.name for w in batch.by_owner("uid-shared")] == ["w0", "w4", "w8"]  # "stale" was dropped
    assert batch.by_owner("uid-1") == [] and [w.name for w in batch.by_owner("uid-other")] == ["w1"]
    assert [n.name for n in batch.by_label("Node", "pool", "p0")] == ["n2", "n4"]  # n0 was relabelled p9
    assert batch.raw("Node", "n0") == {"kind": "Node", "seen": 5}
    # A later re-list of one kind leaves the other kinds' owner entries alone.
    for s in (batch, upserts):
        s.upsert(node("owner-node", pool="p0"))
    batch.replace("Workload", [(lq, None)])
    assert [w.name for w in batch.by_owner("uid-shared")] == ["lone"] and batch.by_owner("uid-4") == []
    assert [n.name for n in batch.list("Node")] == ["n0", "n1", "n2", "n3", "n4", "owner-node"]


def test_access_state_keeps_the_first_stale_moment():
    s = Store()
    assert s.access("Node").state is AccessState.SYNCING and not s.readable("Node")
    s.set_access("Node", AccessState.ERROR, "500", since=100.0)
    s.set_access("Node", AccessState.ERROR, "500", since=200.0)
    assert s.access("Node").since == 100.0
    s.set_access("Node", AccessState.SYNCED)
    assert s.readable("Node")


def test_objects_is_a_copy_keyed_like_the_store():
    s = Store()
    s.upsert(node("a"))
    s.upsert(Workload.model_validate(workload("w", "team-a")))
    copy = s.objects(Workload)
    assert list(copy) == [("team-a", "w")] and copy[("team-a", "w")] is s.get(Workload, "w", "team-a")
    assert s.objects("Node") == {("", "a"): s.get("Node", "a")}
    s.delete("Workload", "w", "team-a")  # the copy keeps what the store held when it was taken
    assert ("team-a", "w") in copy and s.objects(Workload) == {}
