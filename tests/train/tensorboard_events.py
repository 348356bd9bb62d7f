# Oracle of berth's TensorBoard event files, run by tests/train/tensorboard_log_test.cpp: TensorBoard's own
# readers (tensorboard from scripts/oracles.txt) read what berth wrote and this prints it as one JSON object.
#
#   tensorboard_events.py records FILE  -> {"events": [{"wall_time", "step", "file_version"?, "values": [...]}]}
#       every record through TensorBoard's TFRecord reader, which checks both CRCs of every record (a bad one is
#       an error here, not the silent stop the loaders make of it), parsed as TensorBoard's Event proto.
#   tensorboard_events.py run DIR       -> {"scalars": {tag: [[step, value], ...]}, "texts": {tag: [[step, text]]}}
#       what TensorBoard's UI shows for a run directory: its EventAccumulator over every event file there.
#
# Floats are numbers, or "nan" / "inf" / "-inf" (JSON has none of them).
import json
import math
import sys

from tensorboard.backend.event_processing import event_file_loader
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.proto import event_pb2


def number(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def value_json(value):
    kind = value.WhichOneof("value")
    out = {"tag": value.tag}
    if kind == "simple_value":
        out["simple_value"] = number(value.simple_value)
    elif kind == "tensor":
        out["plugin"] = value.metadata.plugin_data.plugin_name
        out["dtype"] = value.tensor.dtype
        out["shape"] = [d.size for d in value.tensor.tensor_shape.dim]
        out["text"] = [s.decode("utf-8") for s in value.tensor.string_val]
    return out


def records(path):
    events = []
    for record in event_file_loader._make_tf_record_iterator(path):  # raises DataLossError on a bad CRC
        event = event_pb2.Event.FromString(record)
        out = {"wall_time": event.wall_time, "step": event.step}
        if event.HasField("file_version"):
            out["file_version"] = event.file_version
        out["values"] = [value_json(v) for v in event.summary.value]
        events.append(out)
    return {"events": events}


def run(directory):
    accumulator = EventAccumulator(directory, size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    scalars = {tag: [[e.step, number(e.value)] for e in accumulator.Scalars(tag)] for tag in tags["scalars"]}
    texts = {
        tag: [[e.step, [s.decode("utf-8") for s in e.tensor_proto.string_val]] for e in accumulator.Tensors(tag)]
        for tag in tags["tensors"]
    }
    return {"scalars": scalars, "texts": texts}


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    print(json.dumps(records(path) if mode == "records" else run(path)))
