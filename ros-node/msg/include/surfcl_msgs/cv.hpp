// OpenCV views of surfcl_msgs messages (header-only):
//
//   #include <surfcl_msgs/cv.hpp>
//   std::vector<cv::KeyPoint> kps = surfcl_msgs::cv::to_cv_keypoints(*keypoint_array);
//   cv::Mat desc = surfcl_msgs::cv::descriptors(*keypoint_array);   // N x 64, CV_32F or CV_8S
//   std::vector<cv::DMatch> dm = surfcl_msgs::cv::to_cv_matches(*match_array);
//
// The functions are templates over the message types, so they take surfcl_msgs::msg types and
// anything with the same fields. The mapping is the one of the Python module surfcl_msgs.cv and
// of the package README:
//   pt = (x, y); size = scale * 9 / 1.2 (OpenCV's SURF derives its scale as
//   `s = size*1.2f/9.0f`, opencv_contrib modules/xfeatures2d/src/surf.cpp); angle = orientation
//   in degrees in [0, 360), -1 for upright SURF and Harris (pass upright = true); response;
//   octave = 0 (not carried); class_id = Laplacian sign.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace surfcl_msgs
{
namespace cv
{

/// OpenCV SURF's keypoint size per unit of surfcl's scale.
constexpr float kSizePerScale = 9.0f / 1.2f;

/// One surfcl_msgs/Keypoint as a cv::KeyPoint.
template <class Keypoint>
::cv::KeyPoint to_cv_keypoint(const Keypoint & kp, bool upright = false)
{
  float angle = -1.0f;
  if (!upright) {
    const double degrees = static_cast<double>(kp.orientation) * (180.0 / CV_PI);
    double wrapped = std::fmod(degrees, 360.0);
    if (wrapped < 0.0) {
      wrapped += 360.0;
    }
    angle = static_cast<float>(wrapped);
  }
  return ::cv::KeyPoint(
    kp.x, kp.y, kp.scale * kSizePerScale, angle, kp.response, 0, static_cast<int>(kp.laplacian));
}

/// The keypoints of a surfcl_msgs/KeypointArray. `upright`: the node's `upright` parameter
/// (or a Harris detector): angles are then -1.
template <class KeypointArray>
std::vector<::cv::KeyPoint> to_cv_keypoints(const KeypointArray & msg, bool upright = false)
{
  std::vector<::cv::KeyPoint> out;
  out.reserve(msg.keypoints.size());
  for (const auto & kp : msg.keypoints) {
    out.push_back(to_cv_keypoint(kp, upright));
  }
  return out;
}

/// The descriptors of a surfcl_msgs/KeypointArray as an N x descriptor_length matrix (a copy):
/// CV_32F from `descriptors`, or CV_8S from `descriptors_q7` when the node sends Q7
/// (`round(127 * f)`; `convertTo(m, CV_32F, 1.0 / 127)` gives the f32 scale, which
/// cv::BFMatcher takes). Throws std::invalid_argument when the sizes disagree.
template <class KeypointArray>
::cv::Mat descriptors(const KeypointArray & msg)
{
  const int n = static_cast<int>(msg.keypoints.size());
  const int length = msg.descriptor_length != 0 ? static_cast<int>(msg.descriptor_length) : 64;
  const bool f32 = !msg.descriptors.empty();
  const std::size_t values = f32 ? msg.descriptors.size() : msg.descriptors_q7.size();
  if (values != static_cast<std::size_t>(n) * static_cast<std::size_t>(length)) {
    throw std::invalid_argument(
            std::to_string(values) + " descriptor values for " + std::to_string(n) +
            " keypoints of " + std::to_string(length) + " values each");
  }
  if (n == 0) {
    return ::cv::Mat(0, length, f32 ? CV_32F : CV_8S);
  }
  if (f32) {
    return ::cv::Mat(n, length, CV_32F, const_cast<float *>(msg.descriptors.data())).clone();
  }
  return ::cv::Mat(n, length, CV_8S, const_cast<int8_t *>(msg.descriptors_q7.data())).clone();
}

/// The matches of a surfcl_msgs/MatchArray: queryIdx indexes the current frame's keypoints,
/// trainIdx the previous frame's, distance as surfcl's matcher reports it.
template <class MatchArray>
std::vector<::cv::DMatch> to_cv_matches(const MatchArray & msg)
{
  std::vector<::cv::DMatch> out;
  out.reserve(msg.matches.size());
  for (const auto & m : msg.matches) {
    out.emplace_back(static_cast<int>(m.query), static_cast<int>(m.train), 0, m.distance);
  }
  return out;
}

}  // namespace cv
}  // namespace surfcl_msgs
