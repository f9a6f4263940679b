#include "broker/http/views.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/text/enum_names.h"
#include "broker/http/html.h"

namespace tidegate::http {
namespace {

std::string Version(const std::string& html) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016zx", std::hash<std::string>{}(html));
  return buf;
}

std::string TeamLink(const std::string& team) {
  return absl::StrCat("<a href=\"/team?name=", UrlEncode(team), "\">", HtmlEscape(team), "</a>");
}

std::string Demand(const google::protobuf::Map<std::string, int64_t>& demand) {
  std::vector<std::string> parts;
  for (const auto& [resource, amount] : demand) parts.push_back(absl::StrCat(resource, " ", amount));
  std::sort(parts.begin(), parts.end());
  return HtmlEscape(absl::StrJoin(parts, ", "));
}

std::string QuotaText(const google::protobuf::Map<std::string, v1::ResourceQuota>& quota) {
  std::vector<std::string> parts;
  for (const auto& [resource, q] : quota) {
    std::string part = absl::StrCat(resource, ":");
    if (q.has_guaranteed()) absl::StrAppend(&part, " guaranteed ", q.guaranteed());
    if (q.has_borrow_limit()) absl::StrAppend(&part, " borrow_limit ", q.borrow_limit());
    if (q.has_lend_limit()) absl::StrAppend(&part, " lend_limit ", q.lend_limit());
    parts.push_back(part);
  }
  std::sort(parts.begin(), parts.end());
  return HtmlEscape(absl::StrJoin(parts, "; "));
}

const char* DayName(int day) {
  static const char* kDays[] = {"?", "mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  return day >= 1 && day <= 7 ? kDays[day] : "?";
}

// Rows of the figures table for one team (one per resource).
void TeamRows(const v1::TeamInfo& t, int depth, bool link, std::string* out) {
  const int rows = std::max(1, t.resources_size());
  for (int i = 0; i < rows; ++i) {
    absl::StrAppend(out, "<tr data-team=\"", HtmlEscape(t.name()), "\">");
    if (i == 0) {
      absl::StrAppend(out, "<td class=\"team\" rowspan=\"", rows, "\" style=\"padding-left:", 0.4 + 1.5 * depth,
                      "em\">", link ? TeamLink(t.name()) : HtmlEscape(t.name()), "</td>");
    }
    if (t.resources_size() == 0) {
      absl::StrAppend(out, "<td colspan=\"6\">no quota</td>");
    } else {
      const v1::TeamResource& r = t.resources(i);
      absl::StrAppend(out, "<td>", HtmlEscape(r.resource()), "</td><td class=\"n\">", r.guaranteed(),
                      "</td><td class=\"n\">", r.used(), "</td><td class=\"n", r.borrowed() > 0 ? " hot" : "", "\">",
                      r.borrowed(), "</td><td class=\"n\">", r.lent(), "</td><td class=\"n\">", r.queued(), "</td>");
    }
    if (i == 0) {
      absl::StrAppend(out, "<td class=\"n\" rowspan=\"", rows, "\">", t.running_jobs(), "</td><td class=\"n\" rowspan=\"",
                      rows, "\">", t.queued_jobs(), "</td>");
    }
    absl::StrAppend(out, "</tr>\n");
  }
}

constexpr char kFiguresHead[] =
    "<thead><tr><th>Team</th><th>Resource</th><th>Guaranteed</th><th>Used</th><th>Borrowed</th><th>Lent</th>"
    "<th>Queued</th><th>Running jobs</th><th>Queued jobs</th></tr></thead>\n";

}  // namespace

LivePart OverviewLive(const service::ReadModel& model, const MayRead& may_read) {
  const std::vector<v1::TeamInfo> teams = model.Teams();
  // Tree order: each team after its parent, siblings in config order.
  absl::flat_hash_map<std::string, std::vector<size_t>> children;
  absl::flat_hash_set<std::string> names;
  for (const auto& t : teams) names.insert(t.name());
  std::vector<size_t> roots;
  for (size_t i = 0; i < teams.size(); ++i) {
    if (teams[i].parent().empty() || !names.contains(teams[i].parent())) {
      roots.push_back(i);
    } else {
      children[teams[i].parent()].push_back(i);
    }
  }
  std::string rows;
  int shown = 0;
  absl::flat_hash_set<size_t> visited;
  std::function<void(size_t, int)> walk = [&](size_t i, int depth) {
    if (!visited.insert(i).second) return;
    if (may_read(teams[i].name())) {
      TeamRows(teams[i], depth, /*link=*/true, &rows);
      ++shown;
    }
    for (size_t c : children[teams[i].name()]) walk(c, depth + 1);
  };
  for (size_t r : roots) walk(r, 0);
  std::string html = "<h2>Quota tree</h2>\n";
  if (shown == 0) {
    absl::StrAppend(&html, "<p id=\"no-teams\">No team you may read.</p>\n");
  } else {
    absl::StrAppend(&html, "<table id=\"quota-tree\">", kFiguresHead, "<tbody>\n", rows, "</tbody></table>\n");
    absl::StrAppend(&html,
                    "<p class=\"note\">An inner team's figures include its subtree. Borrowed: use above the "
                    "guarantee, which reclaim may take back. Lent: of the guarantee, what teams outside it use.</p>\n");
  }
  LivePart out;
  out.version = Version(html);
  out.html = std::move(html);
  return out;
}

// About 100 lines: the team page's live part written top to bottom in page
// order (figures or jobs, tide, forecast, loans); each part is a few lines.
LivePart TeamLive(const service::ReadModel& model, const v1::TeamInfo& team, const TeamExtras& extras) {
  std::string html;
  absl::StrAppend(&html, "<h2>Team ", HtmlEscape(team.name()), "</h2>\n<p>");
  if (!team.parent().empty()) absl::StrAppend(&html, "Parent: ", TeamLink(team.parent()), ". ");
  absl::StrAppend(&html, "<a href=\"/\">All teams</a></p>\n");
  absl::StrAppend(&html, "<table id=\"team-figures\">", kFiguresHead, "<tbody>\n");
  TeamRows(team, 0, /*link=*/false, &html);
  absl::StrAppend(&html, "</tbody></table>\n");

  if (!team.leaf()) {
    std::vector<std::string> subteams;
    for (const auto& t : model.config().teams()) {
      if (t.parent() == team.name()) subteams.push_back(TeamLink(t.name()));
    }
    absl::StrAppend(&html, "<h3>Sub-teams</h3>\n<p id=\"subteams\">", absl::StrJoin(subteams, ", "),
                    "</p>\n<p class=\"note\">Jobs belong to leaf teams; open one to see its jobs.</p>\n");
  } else {
    auto jobs = model.Jobs(team.name(), v1::JOB_STATE_UNSPECIFIED);
    // Waiting jobs first, in queue order; then the others by id.
    std::stable_sort(jobs.begin(), jobs.end(), [&](const auto& a, const auto& b) {
      const int64_t pa = model.QueuePosition(*a), pb = model.QueuePosition(*b);
      if ((pa > 0) != (pb > 0)) return pa > 0;
      if (pa != pb) return pa < pb;
      return a->job() < b->job();
    });
    absl::StrAppend(&html, "<h3>Jobs</h3>\n");
    if (jobs.empty()) {
      absl::StrAppend(&html, "<p id=\"no-jobs\">No live jobs.</p>\n");
    } else {
      absl::StrAppend(&html,
                      "<table id=\"jobs\"><thead><tr><th>Job</th><th>State</th><th>Replicas</th><th>Demand</th>"
                      "<th>Priority</th><th>Submitted</th><th>Admitted</th><th>Position</th>"
                      "<th>Why it waits</th></tr></thead><tbody>\n");
      for (const auto& j : jobs) {
        const int64_t position = model.QueuePosition(*j);
        absl::StrAppend(&html, "<tr data-job=\"", HtmlEscape(j->job()), "\" class=\"", text::JobStateName(j->state()),
                        "\"><td>", HtmlEscape(j->job()), "</td><td>", text::JobStateName(j->state()),
                        j->borrowing() ? " (borrowing)" : "", "</td><td class=\"n\">", j->replicas(), "</td><td>",
                        Demand(j->demand()), "</td><td class=\"n\">", j->priority(), "</td><td>",
                        UtcTime(j->created_at_ms()), "</td><td>", UtcTime(j->admitted_at_ms()),
                        "</td><td class=\"n\">", position > 0 ? absl::StrCat(position) : "", "</td><td class=\"reason\">",
                        j->state() == v1::JOB_STATE_QUEUED ? HtmlEscape(j->reason()) : "", "</td></tr>\n");
      }
      absl::StrAppend(&html, "</tbody></table>\n");
    }
  }

  absl::StrAppend(&html, "<h3>Tide calendar</h3>\n");
  if (team.tide_size() == 0) {
    absl::StrAppend(&html, "<p id=\"no-tide\">No tide rules: the base quota holds all week.</p>\n");
  } else {
    absl::StrAppend(&html, "<table id=\"tide\"><thead><tr><th>Days</th><th>From</th><th>To</th><th>Time zone</th>"
                           "<th>Quota</th></tr></thead><tbody>\n");
    for (const auto& rule : team.tide()) {
      std::vector<std::string> days;
      for (int d : rule.days()) days.push_back(DayName(d));
      absl::StrAppend(&html, "<tr><td>", absl::StrJoin(days, " "), "</td><td>", HtmlEscape(rule.from()), "</td><td>",
                      HtmlEscape(rule.to()), "</td><td>", HtmlEscape(rule.timezone()), "</td><td>",
                      QuotaText(rule.quota()), "</td></tr>\n");
    }
    absl::StrAppend(&html, "</tbody></table>\n");
    if (team.next_tide_change_ms() > 0) {
      absl::StrAppend(&html, "<p id=\"next-tide\">Next change: ", UtcTime(team.next_tide_change_ms()),
                      " (capacity is freed from ", UtcTime(team.next_tide_lead_ms()), ") to ",
                      QuotaText(team.next_tide_quota()), ".</p>\n");
    }
  }
  if (!extras.forecast_resource.empty()) {
    const std::string src = absl::StrCat("/team/forecast.svg?name=", UrlEncode(team.name()),
                                         "&amp;resource=", UrlEncode(extras.forecast_resource));
    absl::StrAppend(&html, "<h3>Forecast (", HtmlEscape(extras.forecast_resource), " demand, next 48 h)</h3>\n",
                    "<p><img id=\"forecast\" src=\"", src, "\" width=\"960\" height=\"420\" alt=\"No forecast: the "
                    "ledger holds too little history for this team yet.\"></p>\n");
  }
  LivePart out;
  out.version = Version(html);

  absl::StrAppend(&html, "<h3>Loans (last 7 days, resource-hours)</h3>\n");
  if (!extras.loans_error.empty()) {
    absl::StrAppend(&html, "<p class=\"error\">", HtmlEscape(extras.loans_error), "</p>\n");
  } else if (extras.loans.empty()) {
    absl::StrAppend(&html, "<p id=\"no-loans\">No loans.</p>\n");
  } else {
    absl::StrAppend(&html, "<table id=\"loans\"><thead><tr><th>Day</th><th>Borrower</th><th>Lender</th>"
                           "<th>Resource</th><th>Hours</th></tr></thead><tbody>\n");
    for (const auto& loan : extras.loans) {
      char hours[32];
      std::snprintf(hours, sizeof hours, "%.2f", loan.amount / 3600.0);
      absl::StrAppend(&html, "<tr><td>", HtmlEscape(loan.day), "</td><td>", HtmlEscape(loan.borrower), "</td><td>",
                      HtmlEscape(loan.lender), "</td><td>", HtmlEscape(loan.resource), "</td><td class=\"n\">", hours,
                      "</td></tr>\n");
    }
    absl::StrAppend(&html, "</tbody></table>\n");
  }
  out.html = std::move(html);
  return out;
}

std::string Page(const std::string& title, const std::string& watch_url, const LivePart& live) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>",
      HtmlEscape(title), "</title><link rel=\"stylesheet\" href=\"/static/style.css\"></head>\n<body data-watch=\"",
      HtmlEscape(watch_url), "\" data-version=\"", HtmlEscape(live.version),
      "\">\n<header><h1><a href=\"/\">Tidegate</a></h1><span id=\"status\"></span></header>\n<main id=\"live\">\n",
      live.html, "</main>\n<script src=\"/static/app.js\"></script>\n</body></html>\n");
}

std::string MessagePage(const std::string& title, const std::string& message) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", HtmlEscape(title),
      "</title><link rel=\"stylesheet\" href=\"/static/style.css\"></head>\n<body>\n<header><h1><a "
      "href=\"/\">Tidegate</a></h1></header>\n<main><h2>",
      HtmlEscape(title), "</h2><p class=\"error\">", HtmlEscape(message), "</p></main>\n</body></html>\n");
}

}  // namespace tidegate::http
