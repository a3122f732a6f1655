// Checks <surfcl_msgs/cv.hpp> (ros-node/msg/include) against the documented mapping, on two
// detections and their matches that ros-node/tests/opencv_conversions.rs writes as text:
//   K <n>, then n lines "x y scale orientation response laplacian"; D, then n * 64 floats;
//   the same for the second image; M <m>, then m lines "query train distance".
// The message structs below have the fields (names and types) rosidl generates for
// ros-node/msg/msg/*.msg. Prints one line per check and PASS; exits 1 on the first failure.
#include <surfcl_msgs/cv.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

struct Keypoint
{
  float x, y, scale, orientation, response;
  int8_t laplacian;
};
struct KeypointArray
{
  std::vector<Keypoint> keypoints;
  std::vector<float> descriptors;
  std::vector<int8_t> descriptors_q7;
  uint32_t descriptor_length = 64;
};
struct Match
{
  uint32_t query, train;
  float distance;
};
struct MatchArray
{
  std::vector<Match> matches;
};

static void check(bool ok, const std::string & what)
{
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    std::exit(1);
  }
}

static bool close(double a, double b, double tol = 1e-4)
{
  return std::abs(a - b) <= tol * std::max(1.0, std::abs(b));
}

static KeypointArray read_detection(std::ifstream & in)
{
  std::string tag;
  std::size_t n = 0;
  in >> tag >> n;
  check(tag == "K" && in.good(), "keypoint block");
  KeypointArray msg;
  for (std::size_t i = 0; i < n; i++) {
    Keypoint k{};
    int laplacian = 0;
    in >> k.x >> k.y >> k.scale >> k.orientation >> k.response >> laplacian;
    k.laplacian = static_cast<int8_t>(laplacian);
    msg.keypoints.push_back(k);
  }
  in >> tag;
  check(tag == "D", "descriptor block");
  msg.descriptors.resize(n * 64);
  for (auto & v : msg.descriptors) {
    in >> v;
  }
  check(in.good(), "descriptor values");
  return msg;
}

static void check_keypoints(const KeypointArray & msg, bool upright)
{
  const auto kps = surfcl_msgs::cv::to_cv_keypoints(msg, upright);
  check(kps.size() == msg.keypoints.size() && !kps.empty(), "keypoint count");
  for (std::size_t i = 0; i < kps.size(); i++) {
    const auto & k = kps[i];
    const auto & m = msg.keypoints[i];
    double angle = -1.0;
    if (!upright) {
      angle = std::fmod(m.orientation * 180.0 / CV_PI + 360.0, 360.0);
    }
    const std::string at = "keypoint " + std::to_string(i) + ": ";
    check(k.pt.x == m.x && k.pt.y == m.y, at + "pt");
    check(close(k.size, m.scale * 9.0 / 1.2), at + "size " + std::to_string(k.size));
    check(close(k.angle, angle), at + "angle " + std::to_string(k.angle));
    check(upright ? k.angle == -1.0f : (k.angle >= 0.0f && k.angle < 360.0f), at + "angle range");
    check(k.response == m.response && k.octave == 0 && k.class_id == m.laplacian, at + "fields");
  }
}

int main(int argc, char ** argv)
{
  check(argc == 2, "usage: check_cv INPUT");
  std::ifstream in(argv[1]);
  const KeypointArray first = read_detection(in);
  const KeypointArray second = read_detection(in);
  std::string tag;
  std::size_t m = 0;
  in >> tag >> m;
  check(tag == "M", "match block");
  MatchArray matches;
  for (std::size_t i = 0; i < m; i++) {
    Match x{};
    in >> x.query >> x.train >> x.distance;
    matches.matches.push_back(x);
  }
  check(in.good() && m > 0, "match values");

  check_keypoints(first, false);
  check_keypoints(second, false);
  check_keypoints(first, true);
  // Orientations outside [0, 2 pi) still give angles in [0, 360).
  KeypointArray odd;
  odd.keypoints = {Keypoint{1, 2, 1.2f, -0.5f, 1, 1}, Keypoint{3, 4, 2.4f, 7.0f, 2, -1}};
  const auto wrapped = surfcl_msgs::cv::to_cv_keypoints(odd);
  check(close(wrapped[0].angle, 360.0 - 0.5 * 180.0 / CV_PI), "negative orientation wraps");
  check(close(wrapped[1].angle, 7.0 * 180.0 / CV_PI - 360.0), "orientation past 2 pi wraps");
  check(close(wrapped[0].size, 9.0), "scale 1.2 is OpenCV's first filter size, 9");
  std::printf("ok: cv::KeyPoint of %zu + %zu keypoints equal the mapping\n", first.keypoints.size(),
    second.keypoints.size());

  const cv::Mat d1 = surfcl_msgs::cv::descriptors(first);
  const cv::Mat d2 = surfcl_msgs::cv::descriptors(second);
  check(d1.type() == CV_32F && d1.rows == static_cast<int>(first.keypoints.size()) && d1.cols == 64,
    "descriptor matrix shape");
  for (int r = 0; r < d1.rows; r++) {
    for (int c = 0; c < 64; c++) {
      check(d1.at<float>(r, c) == first.descriptors[static_cast<std::size_t>(r) * 64 + c], "descriptor value");
    }
  }
  KeypointArray q7 = first;
  q7.descriptors.clear();
  for (float v : first.descriptors) {
    q7.descriptors_q7.push_back(static_cast<int8_t>(std::lround(std::max(-127.0f, std::min(127.0f, v * 127.0f)))));
  }
  const cv::Mat dq = surfcl_msgs::cv::descriptors(q7);
  check(dq.type() == CV_8S && dq.rows == d1.rows && dq.cols == 64, "q7 matrix");
  check(dq.at<int8_t>(0, 5) == q7.descriptors_q7[5], "q7 value");
  KeypointArray bad = first;
  bad.descriptors.pop_back();
  bool refused = false;
  try {
    surfcl_msgs::cv::descriptors(bad);
  } catch (const std::invalid_argument &) {
    refused = true;
  }
  check(refused, "a descriptor array of the wrong size is refused");
  std::printf("ok: descriptors: %d x 64 CV_32F equal to the message, CV_8S for q7, wrong sizes refused\n", d1.rows);

  const auto dm = surfcl_msgs::cv::to_cv_matches(matches);
  check(dm.size() == m, "match count");
  for (std::size_t i = 0; i < m; i++) {
    const auto & x = matches.matches[i];
    check(dm[i].queryIdx == static_cast<int>(x.query) && dm[i].trainIdx == static_cast<int>(x.train) &&
      dm[i].imgIdx == 0 && dm[i].distance == x.distance, "DMatch fields");
    const double l2 = cv::norm(d1.row(dm[i].queryIdx), d2.row(dm[i].trainIdx), cv::NORM_L2);
    check(std::abs(l2 - x.distance) <= 1e-4, "DMatch distance is the L2 of the descriptors");
  }
  std::printf("ok: %zu cv::DMatch equal the matches and the descriptors' L2 distances\n", m);
  std::printf("PASS\n");
  return 0;
}
