// The web view's pages (docs/observability.md): server-rendered HTML whose
// tables work with scripting disabled. The live part of each page (its
// <main>) is also served alone, with a version, so that a little script
// (assets.h) swaps it in when it changes: one renderer for both, and every
// user-chosen string (team names, job ids, reasons) escaped by it.
//
// Pure: reads the published model and what the caller passes in.
#ifndef TIDEGATE_BROKER_HTTP_VIEWS_H_
#define TIDEGATE_BROKER_HTTP_VIEWS_H_

#include <functional>
#include <string>
#include <vector>

#include "broker/service/read_model.h"
#include "ledger/store.h"

namespace tidegate::http {

// Whether the viewer may see a team (its role allows reading it).
using MayRead = std::function<bool(const std::string& team)>;

struct LivePart {
  std::string version;  // changes exactly when `html` outside the loans does
  std::string html;
};

// `/`: the quota tree (guaranteed, used, borrowed, lent, queued per team and
// resource; running and queued jobs), the teams the viewer may read only.
LivePart OverviewLive(const service::ReadModel& model, const MayRead& may_read);

struct TeamExtras {
  std::vector<ledger::LoanRow> loans;  // the team's, from the ledger (last days)
  std::string loans_error;             // shown instead when the ledger could not be read
  std::string forecast_resource;       // the chart's resource; empty: no chart
};
// `/team?name=T`: its figures, its jobs and why each waits, its loans, its
// tide calendar and the forecast chart (an <img> of /team/forecast.svg).
// Loans accrue every second, so they are left out of the version: the page
// is re-sent when jobs or figures change, not on every accounting tick.
LivePart TeamLive(const service::ReadModel& model, const v1::TeamInfo& team, const TeamExtras& extras);

// A whole page around `live`; `watch_url` is where the script asks for the
// next version (empty: no refresh).
std::string Page(const std::string& title, const std::string& watch_url, const LivePart& live);
// A short page for errors (404, 401, 403, 503), the message escaped.
std::string MessagePage(const std::string& title, const std::string& message);

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_VIEWS_H_
