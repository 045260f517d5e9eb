"""``torchvision.transforms.v2.functional`` under its names: each function takes an image,
video, mask, boxes or pure tensor (an image) and runs the kernel registered for that type,
returning the input's type. Image kernels are the v1 ones of
:mod:`ember.vision.transforms.functional`; masks use them at nearest neighbour; boxes move
by their corners; key points move with the pixel they are on.

Example:
    >>> from ember.vision import tv_tensors
    >>> from ember.vision.transforms.v2 import functional as F
    >>> boxes = tv_tensors.BoundingBoxes([0, 0, 2, 1], format="XYXY", canvas_size=(4, 6))
    >>> F.horizontal_flip(boxes)
    BoundingBoxes([[4, 0, 6, 1]], format=BoundingBoxFormat.XYXY, canvas_size=(4, 6),
                  clamping_mode=soft)
"""

from ember.vision.transforms._image import InterpolationMode
from ember.vision.transforms.v2.functional._box_geometry import (
    affine_bounding_boxes,
    crop_bounding_boxes,
    horizontal_flip_bounding_boxes,
    pad_bounding_boxes,
    resize_bounding_boxes,
    rotate_bounding_boxes,
    vertical_flip_bounding_boxes,
)
from ember.vision.transforms.v2.functional._color import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    adjust_sharpness,
    autocontrast,
    equalize,
    erase,
    gaussian_blur,
    invert,
    normalize,
    permute_channels,
    posterize,
    rgb_to_grayscale,
    solarize,
    to_dtype,
)
from ember.vision.transforms.v2.functional._geometry import (
    affine,
    center_crop,
    crop,
    hflip,
    horizontal_flip,
    pad,
    resize,
    resized_crop,
    rotate,
    vertical_flip,
    vflip,
)
from ember.vision.transforms.v2.functional._keypoints import (
    affine_keypoints,
    center_crop_keypoints,
    clamp_keypoints,
    crop_keypoints,
    get_size_keypoints,
    horizontal_flip_keypoints,
    pad_keypoints,
    resize_keypoints,
    resized_crop_keypoints,
    rotate_keypoints,
    sanitize_keypoints,
    vertical_flip_keypoints,
)
from ember.vision.transforms.v2.functional._meta import (
    clamp_bounding_boxes,
    convert_bounding_box_format,
    get_dimensions,
    get_num_channels,
    get_size,
    sanitize_bounding_boxes,
)
from ember.vision.transforms.v2.functional._misc import (
    convert_image_dtype,
    gaussian_noise,
    grayscale_to_rgb,
    jpeg,
)
from ember.vision.transforms.v2.functional._temporal import (
    get_num_frames,
    uniform_temporal_subsample,
)
from ember.vision.transforms.v2.functional._type_conversion import (
    pil_to_tensor,
    to_image,
    to_pil_image,
    to_pure_tensor,
    to_tensor,
)
from ember.vision.transforms.v2.functional._utils import is_pure_tensor, register_kernel
from ember.vision.transforms.v2.functional._warp import (
    elastic,
    elastic_keypoints,
    elastic_transform,
    five_crop,
    perspective,
    perspective_keypoints,
    ten_crop,
)

to_grayscale = rgb_to_grayscale

__all__ = ["InterpolationMode", "adjust_brightness", "adjust_contrast", "adjust_gamma",
           "adjust_hue", "adjust_saturation", "adjust_sharpness", "affine", "affine_bounding_boxes",
           "affine_keypoints", "autocontrast", "center_crop", "center_crop_keypoints",
           "clamp_bounding_boxes", "clamp_keypoints", "convert_bounding_box_format",
           "convert_image_dtype", "crop", "crop_bounding_boxes", "crop_keypoints", "elastic",
           "elastic_keypoints", "elastic_transform", "equalize", "erase", "five_crop",
           "gaussian_blur", "gaussian_noise", "get_dimensions", "get_num_channels",
           "get_num_frames", "get_size",
           "get_size_keypoints", "grayscale_to_rgb", "hflip", "horizontal_flip",
           "horizontal_flip_bounding_boxes", "horizontal_flip_keypoints", "invert",
           "is_pure_tensor", "jpeg", "normalize", "pad", "pad_bounding_boxes", "pad_keypoints",
           "permute_channels", "perspective", "perspective_keypoints", "pil_to_tensor",
           "posterize", "register_kernel", "resize", "resize_bounding_boxes", "resize_keypoints",
           "resized_crop", "resized_crop_keypoints",
           "rgb_to_grayscale", "rotate", "rotate_bounding_boxes", "rotate_keypoints",
           "sanitize_bounding_boxes", "sanitize_keypoints", "solarize",
           "ten_crop", "to_dtype", "to_grayscale", "to_image", "to_pil_image", "to_pure_tensor",
           "to_tensor", "uniform_temporal_subsample", "vertical_flip",
           "vertical_flip_bounding_boxes", "vertical_flip_keypoints", "vflip"]
