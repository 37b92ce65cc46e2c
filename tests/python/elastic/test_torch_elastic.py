"""hora.torch.elastic outside elastic mode: TorchState's commit / restore / sync of a model,
a DistributedOptimizer, an ElasticSampler and plain values, and ElasticSampler's sharding and
resume arithmetic at sizes 1..4."""

import pytest
import torch

import hora.torch as hvd
from hora import runtime
from hora.torch.elastic import ElasticSampler, TorchState


@pytest.fixture(scope="module", autouse=True)
def job():
    hvd.init()
    yield
    hvd.shutdown()


def model_and_optimizer(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())


def train_step(model, optimizer, seed):
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()


def snapshot(model, optimizer):
    params = [p.detach().clone() for p in model.parameters()]
    moments = [optimizer.state[p]["momentum_buffer"].clone() for p in model.parameters()]
    return params + moments


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_commit_restore_model_and_optimizer():
    model, optimizer = model_and_optimizer(1)
    state = TorchState(model, optimizer, epoch=0)
    train_step(model, optimizer, 0)
    state.epoch = 1
    state.commit()
    committed = snapshot(model, optimizer)
    for step in range(3):  # steps update the parameters and momentum in place
        train_step(model, optimizer, 10 + step)
    state.epoch = 2
    assert not same(snapshot(model, optimizer), committed)
    state.restore()
    assert same(snapshot(model, optimizer), committed) and state.epoch == 1
    # Training on from the restored state, then restoring again, lands on the same commit:
    # the commit's buffers are not the optimizer's own.
    train_step(model, optimizer, 20)
    state.restore()
    assert same(snapshot(model, optimizer), committed)


def test_sync_takes_rank_0s_state():
    r = hvd.rank()
    model, optimizer = model_and_optimizer(100 + r)  # different weights on every rank
    train_step(model, optimizer, r)
    state = TorchState(model, optimizer, epoch=r, batch=2 * r)
    state.sync()
    assert (state.epoch, state.batch) == (0, 0)
    mine = snapshot(model, optimizer)
    gathered = hvd.allgather_object(mine)
    assert all(same(other, gathered[0]) for other in gathered)
    # sync commits what it received: a restore stays on rank 0's state.
    train_step(model, optimizer, 7)
    state.restore()
    assert same(snapshot(model, optimizer), gathered[0])


def test_optimizer_steps_after_discarding_a_step():
    """An interrupted step (backward done, no step) is forgotten at reset; training goes on
    and matches across ranks."""
    model, optimizer = model_and_optimizer(3)
    state = TorchState(model, optimizer)
    g = torch.Generator().manual_seed(5)
    model(torch.randn(2, 4, generator=g)).sum().backward()  # allreduces in flight
    state.restore()
    state.on_reset()  # what elastic.run does after the runtime re-initialised
    for p in model.parameters():
        p.grad = None
    train_step(model, optimizer, 30)
    gathered = hvd.allgather_object(snapshot(model, optimizer))
    assert all(same(other, gathered[0]) for other in gathered)


def test_run_syncs_state():
    r = hvd.rank()
    model, optimizer = model_and_optimizer(200 + r)

    @hvd.elastic.run
    def train(state):
        return [p.detach().clone() for p in state.model.parameters()]

    params = train(TorchState(model, optimizer))
    gathered = hvd.allgather_object(params)
    assert all(same(other, gathered[0]) for other in gathered)


def assign_layout(monkeypatch, size, rank):
    monkeypatch.setattr(runtime, "size", lambda: size)
    monkeypatch.setattr(runtime, "rank", lambda: rank)


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_sampler_shards_and_resumes(monkeypatch, size):
    data = list(range(23))
    shards = []
    for rank in range(size):
        assign_layout(monkeypatch, size, rank)
        sampler = ElasticSampler(data, shuffle=True, seed=4)
        sampler.set_epoch(2)
        shards.append(list(sampler))
        assert len(sampler) == -(-23 // size)
    # Every index is someone's; padding repeats the first ones to a multiple of the size.
    flat = [i for shard in shards for i in shard]
    assert set(flat) == set(data) and len(flat) == -(-23 // size) * size
    assert len({len(s) for s in shards}) == 1
    # Same seed and epoch: the same permutation on every rank; another epoch, another one.
    assign_layout(monkeypatch, 1, 0)
    a, b = ElasticSampler(data, seed=4), ElasticSampler(data, seed=4)
    a.set_epoch(2)
    b.set_epoch(3)
    # The shards interleaved are the one-rank order (padding at the end).
    assert [i for column in zip(*shards, strict=True) for i in column][:23] == list(a)
    assert list(a) != list(b) and sorted(a) == sorted(b) == data


@pytest.mark.parametrize("old_size,new_size", [(3, 2), (2, 3), (4, 1), (1, 4), (2, 2)])
def test_sampler_reshards_what_is_left(monkeypatch, old_size, new_size):
    """Ranks of the old size record 2 batches of 3, then the job changes size: the new ranks
    split exactly the indices nobody processed."""
    data = list(range(40))
    processed = set()
    for rank in range(old_size):
        assign_layout(monkeypatch, old_size, rank)
        sampler = ElasticSampler(data, seed=1)
        sampler.set_epoch(0)
        iter(sampler)
        for batch in range(2):
            sampler.record_batch(batch, 3)
        processed |= sampler.processed_indices
    assert len(processed) == 6 * old_size
    state = {"epoch": 0, "processed_indices": processed}
    rest = []
    for rank in range(new_size):
        assign_layout(monkeypatch, new_size, rank)
        sampler = ElasticSampler(data, seed=1)
        sampler.load_state_dict(state)
        rest.append(list(sampler))
    left = set(data) - processed
    assert set().union(*map(set, rest)) == left
    assert sum(map(len, rest)) == -(-len(left) // new_size) * new_size


def test_sampler_in_state_syncs_the_union(monkeypatch):
    """TorchState's sampler sync: every rank's processed indices together, on every rank."""
    r, n = hvd.rank(), hvd.size()
    sampler = ElasticSampler(list(range(30)), shuffle=False)
    state = TorchState(sampler=sampler)
    sampler.set_epoch(1)
    iter(sampler)
    sampler.record_batch(0, 2)  # this rank's first two indices
    state.sync()
    assert sampler.processed_indices == {i for k in range(n) for i in (k, k + n)}
    assert sampler.epoch == 1 and r == hvd.rank()
    assert len(sampler) == -(-(30 - 2 * n) // n)
    # restore goes back to what sync committed; set_epoch starts afresh.
    sampler.set_epoch(2)
    state.restore()
    assert sampler.epoch == 1 and len(sampler.processed_indices) == 2 * n
