"""ember.utils.tensorboard.SummaryWriter writes the event files PyTorch's writer writes for the
same calls (every event but its wall time), and TensorBoard's own reader reads them back."""

import os

import numpy as np
import pytest

import ember

pytest.importorskip("tensorboard")
torch_tensorboard = pytest.importorskip("torch.utils.tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402

torch = pytest.importorskip("torch")
R = np.random.default_rng(0)


def events(log_dir):
    """{run directory relative to log_dir: its events without wall times}."""
    runs = {}
    for root, _, files in os.walk(log_dir):
        for name in sorted(f for f in files if f.startswith("events.out.tfevents")):
            found = []
            for event in EventFileLoader(os.path.join(root, name)).Load():
                event.ClearField("wall_time")
                found.append(event)
            runs[os.path.relpath(root, log_dir)] = found
    return runs


def both(tmp_path, log, **options):
    """The events of ``log(writer, lib)`` written by Ember's and by PyTorch's writer."""
    found = []
    for lib, writer_class in ((ember, SummaryWriter), (torch, torch_tensorboard.SummaryWriter)):
        log_dir = tmp_path / lib.__name__
        writer = writer_class(str(log_dir), **options)
        log(writer, lib)
        writer.close()
        found.append(events(log_dir))
    return found


def test_scalars_as_pytorch_writes_them(tmp_path):
    def log(writer, lib):
        for step in range(3):
            writer.add_scalar("loss", lib.tensor(1.0 / (step + 1)), step)
            writer.add_scalar("plain", 0.25 * step, step, walltime=5.0)
            writer.add_scalar("numpy", np.float32(step), step)
            writer.add_scalar("new", lib.tensor([2.5]), step, new_style=True)
            writer.add_scalar("double", 1 / 3, step, new_style=True, double_precision=True)
            writer.add_scalars("pair", {"train": step, "test": lib.tensor(step + 0.5)}, step)

    mine, theirs = both(tmp_path, log)
    assert set(mine) == {".", "pair_train", "pair_test"}
    assert mine == theirs


@pytest.mark.parametrize("bins,max_bins", [("tensorflow", None), (10, None), ("auto", None),
                                           (np.linspace(-3, 3, 13), None), (64, 7)])
def test_histograms_as_pytorch_writes_them(tmp_path, bins, max_bins):
    values = R.normal(size=(40, 25)).astype(np.float32)

    def log(writer, lib):
        writer.add_histogram("weights", lib.tensor(values), 1, bins=bins, max_bins=max_bins)
        writer.add_histogram("positive", np.abs(values) + 1, 2, bins=bins, max_bins=max_bins)
        writer.add_histogram_raw("raw", 0.0, 2.0, 3, 3.0, 5.0, [1.0, 2.0], [1, 2], 3)

    mine, theirs = both(tmp_path, log)
    assert mine == theirs


@pytest.mark.parametrize("shape,dataformats", [((3, 8, 6), "CHW"), ((1, 8, 6), "CHW"),
                                               ((8, 6, 3), "HWC"), ((8, 6), "HW"),
                                               ((4, 8, 6), "CHW"), ((6, 8, 1), "WHC")])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_images_as_pytorch_writes_them(tmp_path, shape, dataformats, dtype):
    pixels = R.uniform(0, 1.2, size=shape) if dtype == np.float32 else \
        R.integers(0, 256, size=shape)
    pixels = pixels.astype(dtype)

    def log(writer, lib):
        writer.add_image("one", lib.from_numpy(pixels.copy()), 0, dataformats=dataformats)

    mine, theirs = both(tmp_path, log)
    assert mine == theirs


@pytest.mark.parametrize("shape,dataformats", [((11, 3, 5, 4), "NCHW"), ((3, 5, 4, 1), "NHWC"),
                                               ((9, 1, 5, 4), "NCHW")])
def test_image_batches_as_pytorch_grids_them(tmp_path, shape, dataformats):
    pixels = R.uniform(size=shape).astype(np.float32)

    def log(writer, lib):
        writer.add_images("grid", lib.from_numpy(pixels.copy()), 4, dataformats=dataformats)

    mine, theirs = both(tmp_path, log)
    assert mine == theirs


def test_figures_text_and_hparams_as_pytorch_writes_them(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def figure(k):
        fig, ax = plt.subplots(figsize=(2, 1.5), dpi=40)
        ax.plot([0, 1, 2], [k, 1, 0])
        return fig

    def log(writer, lib):
        writer.add_figure("curve", figure(1), 1)
        writer.add_figure("curves", [figure(1), figure(2)], 2)
        writer.add_text("notes", "lr **0.1**, ünïcode", 3)
        writer.add_hparams({"lr": 0.1, "batch": 64, "opt": "adam", "decay": lib.tensor([0.5])},
                           {"hparam/accuracy": 0.91, "hparam/loss": lib.tensor(0.3)},
                           hparam_domain_discrete={"opt": ["adam", "sgd"], "batch": [32, 64]},
                           run_name="trial", global_step=7)

    mine, theirs = both(tmp_path, log)
    assert set(mine) == {".", "trial"}
    assert mine == theirs


def test_a_bool_hyperparameter_is_a_bool(tmp_path):
    # (PyTorch's writer records a bool as the number 1.0 or 0.0: its number case comes first)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"nesterov": True, "amsgrad": False}, {"acc": 1.0}, run_name="r",
                           hparam_domain_discrete={"nesterov": [True, False]})
    experiment, start = events(tmp_path)["r"][1:3]

    def data(event):
        return HParamsPluginData.FromString(event.summary.value[0].metadata.plugin_data.content)

    infos = data(experiment).experiment.hparam_infos
    assert [(i.name, i.type) for i in infos] == [("nesterov", 2), ("amsgrad", 2)]  # BOOL
    assert [v.bool_value for v in infos[0].domain_discrete.values] == [True, False]
    values = data(start).session_start_info.hparams
    assert values["nesterov"].bool_value is True and values["amsgrad"].bool_value is False


def test_purge_step_as_pytorch_writes_it(tmp_path):
    mine, theirs = both(tmp_path, lambda w, lib: w.add_scalar("x", 1.0, 5), purge_step=3)
    assert mine == theirs
    assert mine["."][1].step == 3 and mine["."][2].session_log.status == 1  # START


def test_tensorboard_reads_back_what_a_training_loop_logged(tmp_path):
    model = ember.nn.Linear(4, 2)
    with SummaryWriter(tmp_path) as writer:
        assert writer.get_logdir() == str(tmp_path)
        for step in range(5):
            writer.add_scalar("train/loss", ember.tensor(1.0 / (step + 1)), step)
            writer.add_histogram("weight", model.weight, step)
        writer.add_image("sample", ember.rand(1, 6, 5), 4)
    reader = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0, "histograms": 0})
    reader.Reload()
    losses = reader.Scalars("train/loss")
    assert [s.step for s in losses] == list(range(5))
    np.testing.assert_allclose([s.value for s in losses], [1 / (i + 1) for i in range(5)],
                               rtol=1e-6)
    histogram = reader.Histograms("weight")[-1].histogram_value
    assert histogram.num == 8 and sum(histogram.bucket) == 8
    assert np.isclose(histogram.sum, model.weight.sum().item(), rtol=1e-5)
    image = reader.Images("sample")[0]
    assert (image.width, image.height) == (5, 6) and image.encoded_image_string[1:4] == b"PNG"


def test_a_closed_writer_writes_to_a_new_file(tmp_path):
    writer = SummaryWriter(tmp_path, filename_suffix=".one")
    writer.add_scalar("x", 1.0, 0)
    writer.close()
    writer.add_scalar("x", 2.0, 1)
    writer.flush()
    files = [f for f in os.listdir(tmp_path) if f.startswith("events")]
    assert len(files) == 2 and all(f.endswith(".one") for f in files)
    writer.close()


def test_the_default_log_dir_is_under_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    assert writer.get_logdir().startswith("runs" + os.sep) and \
        writer.get_logdir().endswith("_lr0.1") and os.path.isdir(writer.get_logdir())
    writer.close()


def test_bad_input_is_named(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match=r"add_scalar: 'loss' takes one number, got "
                                             r"shape \(3,\).*\.mean\(\)"):
            writer.add_scalar("loss", ember.ones(3))
        with pytest.warns(UserWarning, match="add_histogram: 'nan' holds NaN or infinite "
                                             "values; not logged"):
            writer.add_histogram("nan", ember.tensor([1.0, float("nan")]))  # the run goes on
        with pytest.raises(ValueError, match="add_histogram: 'h' has no values"):
            writer.add_histogram("h", ember.zeros(0))
        with pytest.raises(ValueError, match="add_histogram: max_bins must be at least 1"):
            writer.add_histogram("h", ember.ones(3), max_bins=0)
        with pytest.raises(TypeError, match=r"add_scalar: 'z' takes a real number, got "
                                            r"complex"):
            writer.add_scalar("z", 1 + 2j)
        with pytest.raises(ValueError, match=r"add_scalars \('test'\): 'loss' takes one "
                                             r"number"):
            writer.add_scalars("loss", {"train": 1.0, "test": ember.ones(2)})
        with pytest.raises(TypeError, match="add_text: 't' takes a str, got int"):
            writer.add_text("t", 3)
        with pytest.raises(ValueError, match=r"add_images: the batch of shape \(0, 3, 4, 4\)"
                                             r" \(NCHW\) holds no image"):
            writer.add_images("i", ember.zeros(0, 3, 4, 4))
        with pytest.raises(TypeError, match=r"hparam_domain_discrete names \['lrr'\], which "
                                            r"hparam_dict does not have"):
            writer.add_hparams({"lr": 0.1}, {"acc": 1.0}, hparam_domain_discrete={"lrr": [1]})
        with pytest.raises(TypeError, match=r"hparam_domain_discrete\['lr'\] must be a list"):
            writer.add_hparams({"lr": 0.1}, {"acc": 1.0}, hparam_domain_discrete={"lr": [True]})
        with pytest.raises(ValueError, match=r"add_histogram: no value of 'h'.*inside the bins"):
            writer.add_histogram("h", ember.tensor([5.0]), bins=[0.0, 1.0])
        with pytest.raises(ValueError, match=r"add_image: dataformats 'CHW' does not describe "
                                             r"an image of shape \(3, 4\).*'HWC'"):
            writer.add_image("i", ember.rand(3, 4))
        with pytest.raises(ValueError, match=r"add_images: an image has 1, 3 or 4 channels \(a "
                                             r"batch 1 or 3\), got 4"):
            writer.add_images("i", ember.rand(2, 4, 3, 3))
        with pytest.raises(ValueError, match="add_hparams: hyperparameter 'layers' is a list"):
            writer.add_hparams({"layers": [1, 2]}, {"acc": 1.0})
        with pytest.raises(TypeError, match=r"hparam_domain_discrete\['lr'\] must be a list"):
            writer.add_hparams({"lr": 0.1}, {"acc": 1.0}, hparam_domain_discrete={"lr": "x"})


def test_pr_curves_audio_tensors_layouts_and_meshes_as_pytorch_writes_them(tmp_path):
    labels = R.integers(0, 2, 50)
    predictions = R.uniform(size=50).astype(np.float32)
    weights = R.uniform(size=50)
    sound = np.sin(np.arange(400) * 0.05).astype(np.float32)
    vertices = R.normal(size=(1, 6, 3)).astype(np.float32)
    colors = R.integers(0, 256, size=(1, 6, 3))
    faces = np.array([[[0, 1, 2], [1, 3, 2]]])
    counts = [np.arange(4.0) + k for k in range(6)]

    def log(writer, lib):
        writer.add_pr_curve("pr", lib.tensor(labels), lib.tensor(predictions), 1)
        writer.add_pr_curve("weighted", labels, predictions, 2, num_thresholds=10,
                            weights=weights)
        writer.add_pr_curve_raw("raw", *counts, global_step=3, num_thresholds=4)
        writer.add_audio("sound", lib.tensor(sound).unsqueeze(0), 4, sample_rate=8000)
        for dtype in ("float32", "float64", "int64", "int32", "int8", "bool", "complex64"):
            writer.add_tensor(f"tensor/{dtype}", lib.tensor(np.arange(6).reshape(2, 3) % 2)
                              .to(getattr(lib, dtype)), 5)
        writer.add_custom_scalars({"losses": {"both": ["Multiline", ["loss/.*"]],
                                              "band": ["Margin", ["m", "lo", "hi"]]}})
        writer.add_custom_scalars_multilinechart(["a", "b"], category="c", title="t")
        writer.add_custom_scalars_marginchart(["v", "l", "u"])
        writer.add_mesh("mesh", lib.tensor(vertices), colors=lib.tensor(colors),
                        faces=lib.tensor(faces), config_dict={"camera": {"fov": 75}},
                        global_step=6)
        writer.add_mesh("cloud", vertices, global_step=7)

    mine, theirs = both(tmp_path, log)
    assert mine == theirs


def test_half_tensors_read_back_as_their_values(tmp_path):
    from tensorboard.util import tensor_util

    values = ember.tensor([[0.5, -2.25, 3.0e4], [1.0e-3, 0.0, -7.5]])
    with SummaryWriter(tmp_path) as writer:
        for dtype in (ember.float16, ember.bfloat16, ember.float32):
            writer.add_tensor(dtype.name, values.to(dtype), 0)
    protos = {e.summary.value[0].tag: e.summary.value[0].tensor
              for e in events(tmp_path)["."][1:]}
    found = {name: tensor_util.make_ndarray(protos[name]) for name in ("float16", "float32")}
    # (TensorBoard without TensorFlow has no bfloat16 type to read into: its 16 bits are
    # a float32's upper half, as TensorFlow stores them)
    found["bfloat16"] = (np.array(protos["bfloat16"].half_val, np.uint32) << 16) \
        .view(np.float32).reshape(2, 3)
    assert protos["bfloat16"].dtype == 14  # DT_BFLOAT16
    for dtype in (ember.float16, ember.bfloat16, ember.float32):
        expected = values.to(dtype).float().numpy()
        np.testing.assert_array_equal(found[dtype.name].astype(np.float32), expected)


def test_embeddings_as_pytorch_writes_them(tmp_path):
    vectors = R.normal(size=(7, 3)).astype(np.float32)
    thumbnails = R.uniform(size=(7, 1, 4, 5)).astype(np.float32)

    def log(writer, lib):
        writer.add_embedding(lib.tensor(vectors), metadata=list("abcdefg"),
                             label_img=lib.tensor(thumbnails), global_step=3, tag="a/b")
        writer.add_embedding(vectors[:2], metadata=[[1, "x"], [2, "y"]],
                             metadata_header=["id", "name"])

    both(tmp_path, log)

    def files(root):
        return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
                for d, _, names in os.walk(root) for f in names if not f.startswith("events")}

    mine, theirs = files(tmp_path / "ember"), files(tmp_path / "torch")
    assert set(mine) == {"projector_config.pbtxt", "00003/a%2fb/tensors.tsv",
                         "00003/a%2fb/metadata.tsv", "00003/a%2fb/sprite.png",
                         "00000/default/tensors.tsv", "00000/default/metadata.tsv"}
    assert mine == theirs


def test_a_models_traced_graph_is_drawn_node_for_node(tmp_path):
    model = ember.nn.Sequential(ember.nn.Conv2d(1, 4, 3), ember.nn.ReLU(), ember.nn.Flatten(),
                                ember.nn.Linear(4 * 4 * 4, 3))
    x = ember.randn(2, 1, 6, 6)
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, x)
    reader = EventAccumulator(str(tmp_path))
    reader.Reload()
    nodes = {n.name: n for n in reader.Graph().node}
    graph = ember.jit.trace(model, x, check_trace=False).graph
    assert [n for n in nodes if n.startswith(("input/", "output/"))] == ["input/0", "output/0"]
    assert {"0/weight", "0/bias", "3/weight", "3/bias"} <= set(nodes)
    equations = [n for n in nodes.values() if n.op not in ("Input", "Output", "Parameter",
                                                          "Constant")]
    assert [n.op for n in equations] == [e.prim.name for e in graph.eqns]
    for n in nodes.values():  # every edge ends at a node
        assert all(i.split(":")[0] in nodes for i in n.input)
    shape = nodes["output/0"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [2, 3]


def test_bad_input_to_the_other_dashboards_is_named(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match=r"add_pr_curve: 'pr'.s predictions must lie in "
                                             r"\[0, 1\].*\.sigmoid\(\)"):
            writer.add_pr_curve("pr", ember.tensor([1, 0]), ember.tensor([0.5, 1.5]))
        with pytest.raises(ValueError, match="add_pr_curve: 'pr' has 3 predictions for 2"):
            writer.add_pr_curve("pr", [1, 0], [0.1, 0.2, 0.3])
        with pytest.raises(ValueError, match=r"add_pr_curve_raw: 'raw' needs as many.*\[2, 2, 2"
                                             r", 2, 2, 3\]"):
            writer.add_pr_curve_raw("raw", *([[1, 2]] * 5), [1, 2, 3])
        with pytest.raises(ValueError, match=r"add_audio: 'a' takes one channel.*\(2, 5\)"):
            writer.add_audio("a", ember.zeros(2, 5))
        with pytest.warns(UserWarning, match="add_audio: 'loud' has samples outside"):
            writer.add_audio("loud", ember.tensor([0.5, 2.0]))
        with pytest.raises(ValueError, match="add_tensor: 'words' has dtype <U1"):
            writer.add_tensor("words", np.array(["a", "b"]))
        with pytest.raises(ValueError, match="chart 'c' is of kind 'Bars'"):
            writer.add_custom_scalars({"k": {"c": ["Bars", ["x"]]}})
        with pytest.raises(ValueError, match="margin chart 'm' takes three tags"):
            writer.add_custom_scalars_marginchart(["a", "b"], title="m")
        with pytest.raises(ValueError, match=r"add_mesh: 'm'.s VERTEX has shape \(4, 3\)"):
            writer.add_mesh("m", ember.zeros(4, 3))
        with pytest.raises(ValueError, match="add_embedding: metadata has 2 entries for 3"):
            writer.add_embedding(ember.zeros(3, 2), metadata=["a", "b"])
        with pytest.raises(ValueError, match=r"add_embedding: mat holds one vector a row.*\(3,\)"):
            writer.add_embedding(ember.zeros(3))


def test_a_graph_with_sub_graphs_is_refused(tmp_path):
    class Branchy(ember.nn.Module):
        def forward(self, x):
            return ember.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))

    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(NotImplementedError, match="add_graph: the traced graph holds a "
                                                      "cond of sub-graphs"):
            writer.add_graph(Branchy(), ember.ones(3))


def test_a_video_is_an_animated_gif_of_the_clips_side_by_side(tmp_path):
    from PIL import Image, ImageSequence

    clips = (R.integers(0, 3, size=(3, 4, 3, 5, 6)) * 127).astype(np.uint8)  # 27 colours
    with SummaryWriter(tmp_path) as writer:
        writer.add_video("clips", ember.from_numpy(clips), 2, fps=5)
    reader = EventAccumulator(str(tmp_path))
    reader.Reload()
    logged = reader.Images("clips")[0]
    assert (logged.step, logged.width, logged.height) == (2, 12, 10)  # 2 × 2 grid
    gif = Image.open(__import__("io").BytesIO(logged.encoded_image_string))
    frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(gif)]
    assert len(frames) == 4 and gif.info["duration"] == 200
    for t, frame in enumerate(frames):
        np.testing.assert_array_equal(frame[:5, :6], clips[0, t].transpose(1, 2, 0))
        np.testing.assert_array_equal(frame[5:, 6:], 0)  # the grid's empty fourth place


def test_boxes_are_drawn_on_the_image(tmp_path):
    from PIL import Image

    image = np.full((3, 20, 30), 0.5, np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image_with_boxes("boxes", ember.from_numpy(image),
                                    ember.tensor([[2.0, 3.0, 12.0, 15.0]]), 1, labels=["cat"])
        writer.add_image_with_boxes("twice", ember.from_numpy(image),
                                    ember.tensor([[2.0, 3.0, 12.0, 15.0]]), 1, rescale=2)
    reader = EventAccumulator(str(tmp_path))
    reader.Reload()

    def pixels(tag):
        logged = reader.Images(tag)[0]
        return np.asarray(Image.open(__import__("io").BytesIO(logged.encoded_image_string)))

    drawn = pixels("boxes")
    assert drawn.shape == (20, 30, 3)
    assert drawn[8, 2].tolist() == [255, 0, 0] and drawn[15, 8].tolist() == [255, 0, 0]
    assert drawn[6, 6].tolist() == [127, 127, 127] and drawn[18, 25].tolist() == [127] * 3
    twice = pixels("twice")
    assert twice.shape == (40, 60, 3) and twice[16, 4].tolist() == [255, 0, 0]


def test_bad_videos_are_named(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match=r"add_video: a video is \(N, T, C, H, W\).*"
                                             r"\(4, 3, 8, 8\)"):
            writer.add_video("v", ember.rand(4, 3, 8, 8))
        with pytest.raises(ValueError, match="add_video: fps must be positive, got 0"):
            writer.add_video("v", ember.rand(1, 2, 3, 4, 4), fps=0)


def test_a_numpy_domain_is_read_as_plain_values(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": np.float32(0.5)}, {"acc": 1.0}, run_name="r",
                           hparam_domain_discrete={"lr": [np.float32(0.5), 0.25]})
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    experiment = events(tmp_path)["r"][1].summary.value[0].metadata.plugin_data.content
    info = HParamsPluginData.FromString(experiment).experiment.hparam_infos[0]
    assert [v.number_value for v in info.domain_discrete.values] == [0.5, 0.25]


def test_add_graph_traces_in_eval_mode_and_restores_the_mode(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4),
                                ember.nn.Dropout(0.5))
    x = ember.randn(5, 3)
    state = ember.get_rng_state()
    with SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, x)
    assert model.training and model[1].num_batches_tracked.item() == 0
    assert (model[1].running_mean.numpy() == 0).all()
    assert ember.equal(ember.get_rng_state(), state)  # dropout drew nothing


def test_add_graph_of_a_dict_output_needs_use_strict_trace_false(tmp_path):
    class Named(ember.nn.Module):
        def forward(self, x):
            return {"double": x * 2}

    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(Exception, match="strict"):
            writer.add_graph(Named(), ember.ones(2))
        writer.add_graph(Named(), ember.ones(2), use_strict_trace=False)


def test_full_scale_float16_audio_stays_full_scale(tmp_path):
    import io
    import wave

    with SummaryWriter(tmp_path) as writer:
        writer.add_audio("a", ember.tensor([0.0, 0.5, 1.0, -1.0], dtype=ember.float16))
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto.event_pb2 import Event

    name = next(f for f in os.listdir(tmp_path) if f.startswith("events"))
    raw = list(RawEventFileLoader(str(tmp_path / name)).Load())[1]
    encoded = Event.FromString(raw).summary.value[0].audio.encoded_audio_string
    with wave.open(io.BytesIO(encoded)) as w:
        samples = np.frombuffer(w.readframes(4), "<i2")
    assert samples.tolist() == [0, 16383, 32767, -32767]


def test_bad_thumbnails_are_refused_before_anything_is_written(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match=r"add_embedding: label_img holds \(N, C, H, W\) "
                                             r"thumbnails with 1 or 3 channels, got shape "
                                             r"\(2, 4, 3, 3\)"):
            writer.add_embedding(ember.zeros(2, 2), label_img=ember.zeros(2, 4, 3, 3))
    assert not os.path.exists(tmp_path / "00000")
