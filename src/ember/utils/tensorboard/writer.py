"""``SummaryWriter``: PyTorch's TensorBoard logger, writing event files TensorBoard's own
writer (``EventFileWriter``, buffered on a thread of its own) lays out."""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ember.ops.creation import from_numpy
from ember.utils.tensorboard import graph, plugins, projector, summaries


@functools.cache
def _tensorflow_bins() -> tuple[float, ...]:
    """TensorBoard's default histogram edges: 0 and ±1e-12, each next one 1.1 times the last
    (multiplied in turn, as TensorFlow's writers do), below 1e20."""
    edges = [1e-12]
    while edges[-1] * 1.1 < 1e20:
        edges.append(edges[-1] * 1.1)
    return (*(-e for e in reversed(edges)), 0.0, *edges)


class SummaryWriter:
    """Writes scalars, histograms, images, videos, figures, text, hyperparameters, PR
    curves, audio, tensors, meshes, embeddings and a model's graph to an event file in
    ``log_dir`` (default ``runs/<date>_<host><comment>``) for TensorBoard, as
    ``torch.utils.tensorboard.SummaryWriter`` does; ``purge_step`` hides what an earlier
    run logged from that step on. Events are buffered (``max_queue`` of them, or
    ``flush_secs``) and written by a thread; :meth:`flush` and :meth:`close` write them now.

    Example:
        >>> with SummaryWriter("runs/demo") as writer:
        ...     for step in range(3):
        ...         writer.add_scalar("loss", 1.0 / (step + 1), step)
    """

    def __init__(self, log_dir: str | os.PathLike | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self._options = (max_queue, flush_secs, filename_suffix)
        self._writers: dict[str, EventFileWriter] = {}
        self._projector: ProjectorConfig | None = None  # every embedding logged so far
        self._writer()

    def _writer(self, log_dir: str | None = None) -> EventFileWriter:
        """The event file writer of ``log_dir`` (this writer's own by default), made (again,
        after :meth:`close`) where there is none; the first one records ``purge_step``."""
        log_dir = self.log_dir if log_dir is None else log_dir
        if log_dir not in self._writers:
            self._writers[log_dir] = EventFileWriter(log_dir, *self._options)
            if log_dir == self.log_dir and self.purge_step is not None:
                for event in (Event(file_version="brain.Event:2"),
                              Event(session_log=SessionLog(status=SessionLog.START))):
                    event.step, event.wall_time = self.purge_step, time.time()
                    self._writers[log_dir].add_event(event)
                self.purge_step = None
        return self._writers[log_dir]

    def _add(self, summary: Summary | None, global_step: int | None, walltime: float | None,
             log_dir: str | None = None) -> None:
        if summary is None:  # (a histogram of non-finite values: warned, not logged)
            return
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        self._writer(log_dir).add_event(event)

    def get_logdir(self) -> str:
        """The directory this writer's events go to.

        Example:
            >>> SummaryWriter("runs/a").get_logdir()
            'runs/a'
        """
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Logs one number (a Python or NumPy number, or a one-element tensor) under ``tag``.

        Example:
            >>> writer.add_scalar("train/loss", loss, step)
        """
        self._add(summaries.scalar(tag, scalar_value, new_style, double_precision),
                  global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: Mapping[str, Any],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Logs several numbers on one chart: each in a run of its own,
        ``<log_dir>/<main_tag>_<tag>``, under ``main_tag``.

        Example:
            >>> writer.add_scalars("loss", {"train": 0.4, "test": 0.5}, step)
        """
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            run = f"{self.log_dir}/{main_tag.replace('/', '_')}_{tag}"
            self._add(summaries.scalar(main_tag, value, op=f"add_scalars ({tag!r})"),
                      global_step, walltime, run)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """Logs the distribution of ``values``: over TensorBoard's default edges
        (``"tensorflow"``), or NumPy's ``bins`` (a count, edges, or a rule such as ``"auto"``).

        Example:
            >>> writer.add_histogram("fc1.weight", model.fc1.weight, step)
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = _tensorflow_bins()
        self._add(summaries.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,
                          sum_squares: float, bucket_limits: Sequence[float],
                          bucket_counts: Sequence[float], global_step: int | None = None,
                          walltime: float | None = None) -> None:
        """Logs a histogram already counted: its statistics and each bucket's right edge
        and count.

        Example:
            >>> writer.add_histogram_raw("h", 0, 2, 3, 3, 5, [1, 2], [1, 2], step)
        """
        self._add(summaries.histogram_raw(tag, min, max, num, sum, sum_squares,
                                          bucket_limits, bucket_counts), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """Logs an image: uint8 values as they are, floats in [0, 1]; ``dataformats`` names
        the dimensions (``CHW``, ``HWC``, ``HW``; 1, 3 or 4 channels).

        Example:
            >>> writer.add_image("sample", images[0], step)  # (1, 28, 28)
        """
        self._add(summaries.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """Logs a batch of images as one grid, up to eight a row (``NCHW`` or ``NHWC``; 1 or
        3 channels).

        Example:
            >>> writer.add_images("batch", images[:16], step)  # (16, 1, 28, 28)
        """
        self._add(summaries.image(tag, img_tensor, dataformats, "add_images"), global_step,
                  walltime)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any,
                             global_step: int | None = None, walltime: float | None = None,
                             rescale: float = 1, dataformats: str = "CHW",
                             labels: Sequence[str] | None = None) -> None:
        """Logs an image with ``(x1, y1, x2, y2)`` boxes (N, 4, in pixels of the image as
        given) drawn in red, with ``labels`` if given; ``rescale`` scales the image first.

        Example:
            >>> writer.add_image_with_boxes("detections", image, boxes, step, labels=names)
        """
        from ember.vision.utils import draw_bounding_boxes

        rgb = summaries.pixels(summaries.to_hwc(summaries.to_numpy(img_tensor), dataformats,
                                                "add_image_with_boxes"))
        boxes = summaries.to_numpy(box_tensor).astype(np.float64).reshape(-1, 4) * rescale
        if rescale != 1:
            from PIL import Image

            size = (round(rgb.shape[1] * rescale), round(rgb.shape[0] * rescale))
            rgb = np.asarray(Image.fromarray(rgb).resize(size))
        drawn = draw_bounding_boxes(
            from_numpy(np.ascontiguousarray(rgb[..., :3].transpose(2, 0, 1))), from_numpy(boxes),
            labels=None if labels is None else list(labels), colors="red", width=2)
        self.add_image(tag, drawn, global_step, walltime)

    def add_video(self, tag: str, vid_tensor: Any, global_step: int | None = None,
                  fps: float = 4, walltime: float | None = None) -> None:
        """Logs clips (N, T, C, H, W; uint8, or floats in [0, 1]) as one animated GIF, the N
        clips side by side, at ``fps`` frames a second (encoded by Pillow: PyTorch's writer
        needs moviepy).

        Example:
            >>> writer.add_video("rollout", frames.unsqueeze(0), step, fps=10)
        """
        self._add(summaries.video(tag, vid_tensor, fps), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None,
                   close: bool = True, walltime: float | None = None) -> None:
        """Logs a matplotlib figure (or a list of them, as a grid) as an image, closing it
        unless ``close=False``.

        Example:
            >>> writer.add_figure("confusion", fig, step)
        """
        figures = figure if isinstance(figure, list) else [figure]
        pixels = np.stack([_rgb(f, close) for f in figures])
        if isinstance(figure, list):
            self.add_images(tag, pixels, global_step, walltime, dataformats="NHWC")
        else:
            self.add_image(tag, pixels[0], global_step, walltime, dataformats="HWC")

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Logs text (Markdown) for TensorBoard's text tab.

        Example:
            >>> writer.add_text("config", "lr **0.001**", 0)
        """
        self._add(summaries.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
                    hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:
        """Logs a run's hyperparameters and final metrics for TensorBoard's HParams tab, in a
        run of its own (``<log_dir>/<run_name>``, a timestamp by default), the metrics as
        scalars there.

        Example:
            >>> writer.add_hparams({"lr": 1e-3, "batch": 64}, {"hparam/accuracy": 0.91})
        """
        if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
            raise TypeError(f"add_hparams: hparam_dict and metric_dict must be dicts, got "
                            f"{type(hparam_dict).__name__} and {type(metric_dict).__name__}")
        run = os.path.join(self.log_dir, run_name or str(time.time()))
        for record in summaries.hparams(hparam_dict, metric_dict, hparam_domain_discrete):
            self._add(record, global_step, None, run)
        for tag, value in metric_dict.items():
            self._add(summaries.scalar(tag, value, op="add_hparams"), global_step, None, run)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any,
                     global_step: int | None = None, num_thresholds: int = 127,
                     weights: Any = None, walltime: float | None = None) -> None:
        """Logs the precision-recall curve of ``predictions`` (probabilities in [0, 1])
        against ``labels`` (0/1) at ``num_thresholds`` thresholds (at most 127).

        Example:
            >>> writer.add_pr_curve("pr/cat", labels == 3, probs[:, 3], step)
        """
        self._add(plugins.pr_curve(tag, labels, predictions, num_thresholds, weights),
                  global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any,
                         false_positive_counts: Any, true_negative_counts: Any,
                         false_negative_counts: Any, precision: Any, recall: Any,
                         global_step: int | None = None, num_thresholds: int = 127,
                         weights: Any = None, walltime: float | None = None) -> None:
        """Logs a precision-recall curve already counted at each threshold (``weights`` is
        accepted for PyTorch's signature and unused, as there).

        Example:
            >>> writer.add_pr_curve_raw("pr", tp, fp, tn, fn, precision, recall, step, 4)
        """
        self._add(plugins.pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                                       true_negative_counts, false_negative_counts,
                                       precision, recall, num_thresholds),
                  global_step, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: int | None = None,
                  sample_rate: int = 44100, walltime: float | None = None) -> None:
        """Logs one channel of sound, samples in [-1, 1], as a 16-bit WAV.

        Example:
            >>> writer.add_audio("tone", ember.sin(ember.arange(8000) * 0.3), 0, 8000)
        """
        self._add(plugins.audio(tag, snd_tensor, sample_rate), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: int | None = None,
                   walltime: float | None = None) -> None:
        """Logs a whole tensor, its dtype and shape kept (TensorBoard's tensor plugin).

        Example:
            >>> writer.add_tensor("confusion", matrix, step)
        """
        self._add(plugins.tensor(tag, tensor), global_step, walltime)

    def add_custom_scalars(self, layout: Mapping[str, Mapping[str, Sequence[Any]]]) -> None:
        """Lays out the Custom Scalars dashboard: ``{category: {title: ["Multiline", [tags
        or regexes]] or ["Margin", [value, lower, upper]]}}``.

        Example:
            >>> writer.add_custom_scalars({"loss": {"both": ["Multiline", ["loss/.*"]]}})
        """
        self._add(plugins.custom_scalars(layout), None, None)

    def add_custom_scalars_multilinechart(self, tags: Sequence[str],
                                          category: str = "default",
                                          title: str = "untitled") -> None:
        """A Custom Scalars chart drawing ``tags`` together.

        Example:
            >>> writer.add_custom_scalars_multilinechart(["loss/train", "loss/test"])
        """
        self.add_custom_scalars({category: {title: ["Multiline", list(tags)]}})

    def add_custom_scalars_marginchart(self, tags: Sequence[str], category: str = "default",
                                       title: str = "untitled") -> None:
        """A Custom Scalars chart drawing ``tags[0]`` between ``tags[1]`` and ``tags[2]``.

        Example:
            >>> writer.add_custom_scalars_marginchart(["acc", "acc/low", "acc/high"])
        """
        self.add_custom_scalars({category: {title: ["Margin", list(tags)]}})

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                 config_dict: Mapping[str, Any] | None = None,
                 global_step: int | None = None, walltime: float | None = None) -> None:
        """Logs a point cloud or triangle mesh: ``vertices`` (B, N, 3), optionally
        ``colors`` (B, N, 3, 0–255) and ``faces`` (B, F, 3, vertex indices).

        Example:
            >>> writer.add_mesh("cloud", points.unsqueeze(0), global_step=step)
        """
        self._add(plugins.mesh(tag, vertices, colors, faces, config_dict), global_step,
                  walltime)

    def add_embedding(self, mat: Any, metadata: Sequence[Any] | None = None,
                      label_img: Any = None, global_step: int | None = None,
                      tag: str = "default", metadata_header: Sequence[str] | None = None
                      ) -> None:
        """Shows the rows of ``mat`` (N, D) in the Projector, labelled by ``metadata`` (a
        label a row, or rows of columns under ``metadata_header``) and ``label_img`` (N, C,
        H, W thumbnails in [0, 1]).

        Example:
            >>> writer.add_embedding(features, metadata=labels.tolist(), label_img=images)
        """
        if self._projector is None:
            self._projector = ProjectorConfig()
        projector.write_embedding(self._projector, self._writer().get_logdir(), mat, metadata,
                                  label_img, 0 if global_step is None else int(global_step),
                                  tag, metadata_header)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Logs ``model``'s forward on ``input_to_model`` for the Graphs dashboard: the graph
        ``ember.jit.trace`` makes, node by node, traced in eval mode (no running statistics
        change, no random numbers drawn; the mode is restored after). ``verbose`` also prints
        it; ``use_strict_trace=False`` allows list and dict outputs, as in PyTorch.

        Example:
            >>> writer.add_graph(model, images[:1])
        """
        training = getattr(model, "training", None)
        if training is not None:
            model.eval()
        try:
            definition = graph.trace_graph(model, input_to_model, use_strict_trace)
        finally:
            if training is not None:
                model.train(training)
        if verbose:
            print(definition)
        self._writer().add_event(Event(graph_def=definition.SerializeToString(),
                                       wall_time=time.time()))

    def flush(self) -> None:
        """Writes every buffered event to disk now.

        Example:
            >>> writer.flush()  # before reading the event files
        """
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        """Writes what is buffered and closes the files (a later ``add_*`` opens new ones).

        Example:
            >>> writer.close()
        """
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rgb(figure: Any, close: bool) -> np.ndarray:
    """A matplotlib figure rendered to (H, W, 3) uint8 pixels."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    if close:
        plt.close(figure)
    return pixels
