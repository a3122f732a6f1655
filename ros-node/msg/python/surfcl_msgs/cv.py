"""OpenCV and numpy views of surfcl_msgs messages.

Installed with the interface package as ``surfcl_msgs.cv``::

    from surfcl_msgs.cv import to_cv_keypoints, descriptors, to_cv_matches

    kps = to_cv_keypoints(keypoint_array_msg)      # list of cv2.KeyPoint
    desc = descriptors(keypoint_array_msg)         # (N, 64) float32, or int8 for q7
    dm = to_cv_matches(match_array_msg)            # list of cv2.DMatch

The functions read attributes only (``msg.keypoints[i].x``, ``msg.descriptors``, ...), so they
take rclpy messages and any object with the same fields. The mapping (the package README states
it once, with its source):

  pt        (x, y)
  size      scale * 9 / 1.2: OpenCV's SURF keeps the filter size in ``size`` and derives the
            scale as ``s = size*1.2f/9.0f`` (opencv_contrib, modules/xfeatures2d/src/surf.cpp)
  angle     the orientation in degrees, in [0, 360); -1 (OpenCV's "not applicable") for upright
            SURF and Harris keypoints, whose orientation 0 is no measurement: pass ``upright=True``
  response  response
  octave    0: the messages carry no pyramid octave
  class_id  the Laplacian sign (1 dark blob, -1 bright blob, 0 Harris)
"""

import math

#: OpenCV SURF's keypoint size per unit of surfcl's scale (size = 9 / 1.2 * scale).
SIZE_PER_SCALE = 9.0 / 1.2


def keypoint_values(kp, upright=False):
    """The cv2.KeyPoint fields of one surfcl_msgs/Keypoint, as a tuple
    (x, y, size, angle, response, octave, class_id), without needing cv2."""
    if upright:
        angle = -1.0
    else:
        angle = math.degrees(float(kp.orientation)) % 360.0
    return (
        float(kp.x),
        float(kp.y),
        float(kp.scale) * SIZE_PER_SCALE,
        angle,
        float(kp.response),
        0,
        int(kp.laplacian),
    )


def to_cv_keypoints(msg, upright=False):
    """The keypoints of a surfcl_msgs/KeypointArray as a list of cv2.KeyPoint.

    ``upright``: the node's ``upright`` parameter (or a Harris detector): angles are then -1.
    """
    import cv2

    out = []
    for kp in msg.keypoints:
        x, y, size, angle, response, octave, class_id = keypoint_values(kp, upright)
        out.append(cv2.KeyPoint(x, y, size, angle, response, octave, class_id))
    return out


def descriptors(msg):
    """The descriptors of a surfcl_msgs/KeypointArray as an (N, descriptor_length) numpy array:
    float32 from ``descriptors``, or int8 from ``descriptors_q7`` when the node sends Q7
    (``round(127 * f)``; divide by 127 for the f32 scale, and use ``.astype(numpy.float32)``
    for cv2.BFMatcher, which takes float or uint8 descriptors)."""
    import numpy as np

    n = len(msg.keypoints)
    length = int(msg.descriptor_length) or 64
    if len(msg.descriptors) > 0:
        values = np.asarray(msg.descriptors, dtype=np.float32)
    else:
        values = np.asarray(msg.descriptors_q7, dtype=np.int8)
    if values.size != n * length:
        raise ValueError(
            "%d descriptor values for %d keypoints of %d values each" % (values.size, n, length)
        )
    return values.reshape(n, length)


def to_cv_matches(msg):
    """The matches of a surfcl_msgs/MatchArray as a list of cv2.DMatch: queryIdx indexes the
    current frame's keypoints, trainIdx the previous frame's (``previous_header``), distance as
    surfcl's matcher reports it (L2 of the unit-length descriptors)."""
    import cv2

    return [
        cv2.DMatch(int(m.query), int(m.train), 0, float(m.distance)) for m in msg.matches
    ]
