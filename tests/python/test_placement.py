"""berth.explain_placement on a real transformers model split between cpu and meta, a batch, a loss and an
optimizer's state: the report names the tensors by device with their bytes, and the fix."""

import pytest
import torch

import berth

transformers = pytest.importorskip("transformers")


def tiny_bert():
    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=32)
    torch.manual_seed(0)
    return transformers.BertModel(config).eval()


def bytes_of(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def test_a_model_on_one_device_is_ok():
    model = tiny_bert()
    report = berth.explain_placement(model)
    assert report.ok and report.device == "cpu" and report.problems == []
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    assert report.total_bytes == bytes_of(params.values()) + bytes_of(buffers.values())
    assert "ok: everything checked is on cpu" in str(report)


def test_a_model_split_between_cpu_and_meta_names_the_meta_tensors_and_the_fix():
    model = tiny_bert()
    model.encoder.layer[1].to("meta")
    report = berth.explain_placement(model)
    assert not report.ok and report.device == "cpu"
    meta_params = {n: p for n, p in model.named_parameters() if p.is_meta}
    assert meta_params and all(n.startswith("encoder.layer.1.") for n in meta_params)
    groups = {g["device"]: g for g in report.groups}
    assert groups["meta"]["tensors"] == len(meta_params)
    assert groups["meta"]["bytes"] == bytes_of(meta_params.values())
    assert groups["meta"]["first_names"][0] == next(iter(meta_params))
    text = str(report)
    assert "meta" in text and next(iter(meta_params)) in text
    assert "from_pretrained" in report.problems[0] and "to_empty" in report.problems[0]
    with pytest.raises(berth.PlacementError) as raised:
        report.raise_if_problems()
    assert next(iter(meta_params)) in str(raised.value)


def test_a_model_on_the_wrong_device_gets_to_as_the_fix():
    report = berth.explain_placement(tiny_bert(), device="meta")
    assert not report.ok
    assert 'model.to("meta")' in report.problems[0]


def test_a_batch_and_a_loss_elsewhere_are_named():
    model = tiny_bert()
    batch = {"input_ids": torch.zeros(2, 4, dtype=torch.long),
             "attention_mask": torch.ones(2, 4, dtype=torch.long, device="meta")}
    loss = torch.zeros((), device="meta")
    report = berth.explain_placement(model, batch=batch, loss=loss)
    assert not report.ok and len(report.problems) == 2
    assert "attention_mask" in report.problems[0] and "input_ids" not in report.problems[0]
    assert "loss" in report.problems[1]


def test_optimizer_state_on_another_device_than_its_parameter_is_named():
    model = tiny_bert()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.zeros(1, 4, dtype=torch.long)).last_hidden_state.sum().backward()
    optimizer.step()
    assert berth.explain_placement(model, optimizer=optimizer).ok  # Adam's CPU step count is by design
    first = next(iter(model.parameters()))
    optimizer.state[first]["exp_avg"] = optimizer.state[first]["exp_avg"].to("meta")
    report = berth.explain_placement(model, optimizer=optimizer)
    assert not report.ok
    name = next(iter(dict(model.named_parameters())))
    assert name in report.problems[0] and "exp_avg on meta" in report.problems[0]
    assert "load_state_dict" in report.problems[0]
