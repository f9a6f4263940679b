#include "broker/core/property_shrink.h"

#include <cstdlib>

#include "broker/core/property_checker.h"

namespace tidegate::core::property {



// The kind of failure, so shrinking keeps the same bug rather than finding
// another: the text before any ':', without parenthesized parts and with
// numbers (job, team and cluster ids) blanked ("job j# waits  although it
// fits now", "infeasible", "team t# gpu").
std::string Kind(const std::string& err) {
  std::string kind;
  int depth = 0;
  for (char c : err.substr(0, std::min(err.find(':'), err.size()))) {
    if (c == '(') ++depth;
    if (depth == 0 && !(c >= '0' && c <= '9')) kind += c;
    if (depth == 0 && c >= '0' && c <= '9' && (kind.empty() || kind.back() != '#')) kind += '#';
    if (c == ')') --depth;
  }
  return kind;
}

bool Mentions(const Step& s, const std::string& team) {
  if (s.cmd.has_submit()) return s.cmd.submit().team() == team;
  if (s.cmd.has_set_quota()) return s.cmd.set_quota().team() == team;
  if (s.cmd.has_adopt()) {
    for (const auto& j : s.cmd.adopt().jobs()) {
      if (j.team() == team) return true;
    }
  }
  return false;
}

// Removes chunks of steps, and leaf teams no step names, while the same kind
// of failure persists.
void Shrink(v1::Config* config, std::vector<Step>* steps, const Options& opt, const std::string& err) {
  const std::string kind = Kind(err);
  auto still_fails = [&](const v1::Config& c, const std::vector<Step>& st) {
    const std::string e = Replay(c, st, opt);
    return !e.empty() && Kind(e) == kind;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t chunk = std::max<size_t>(1, steps->size() / 2); chunk >= 1; chunk /= 2) {
      for (size_t start = 0; start < steps->size();) {
        std::vector<Step> fewer(steps->begin(), steps->begin() + start);
        fewer.insert(fewer.end(), steps->begin() + std::min(steps->size(), start + chunk), steps->end());
        if (still_fails(*config, fewer)) {
          *steps = std::move(fewer);
        } else {
          start += chunk;
        }
      }
      if (chunk == 1) break;
    }
    for (int i = config->teams_size() - 1; i >= 0; --i) {
      const std::string name = config->teams(i).name();
      bool needed = std::any_of(steps->begin(), steps->end(), [&](const Step& s) { return Mentions(s, name); });
      for (const auto& t : config->teams()) needed |= t.parent() == name;
      if (needed) continue;
      v1::Config fewer = *config;
      fewer.mutable_teams()->DeleteSubrange(i, 1);
      if (still_fails(fewer, *steps)) {
        *config = std::move(fewer);
        changed = true;
      }
    }
  }
}

std::string Report(uint64_t seed, const v1::Config& config, const std::vector<Step>& steps, const Options& opt) {
  std::string events;
  const std::string err = Replay(config, steps, opt, &events);
  std::string out = absl::StrCat("seed ", seed, ": ", err, "\n  config: ", Text(config), "\n  steps (minimal):\n");
  if (std::getenv("TIDEGATE_PROPERTY_VERBOSE")) {
    // Every step's events too.
    Checker checker(config, /*check=*/true, !opt.adopt);
    for (const Step& s : steps) {
      const size_t before = checker.stream().size();
      const std::string e = checker.Step(s.cmd, s.now);
      absl::StrAppend(&out, "    t=+", (s.now - kStart) / kSec, "s ", Text(s.cmd), "\n");
      for (size_t i = before; i < checker.stream().size(); ++i) absl::StrAppend(&out, "        ", checker.stream()[i], "\n");
      if (!e.empty()) break;
    }
    return out;
  }
  for (const Step& s : steps) absl::StrAppend(&out, "    t=+", (s.now - kStart) / kSec, "s ", Text(s.cmd), "\n");
  absl::StrAppend(&out, "  events of the last step:\n    ", events, "\n");
  return out;
}

}  // namespace tidegate::core::property
