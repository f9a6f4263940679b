#include "adapters/kubernetes/webhook.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "spdlog/spdlog.h"

namespace tidegate::adapters::kube {

using json = nlohmann::json;

json Mutate(const json& review, const KubeOptions& options) {
  const json request = review.value("request", json::object());
  json response = {{"uid", request.value("uid", "")}, {"allowed", true}};
  const json kind = request.value("kind", json::object());
  const json object = request.value("object", json::object());
  const bool is_job = kind.value("group", "") == "batch" && kind.value("kind", "") == "Job";
  if (is_job && request.value("operation", "") == "CREATE" && object.is_object()) {
    const json labels = object.value("metadata", json::object()).value("labels", json::object());
    const std::string ns = request.value("namespace", object.value("metadata", json::object()).value("namespace", ""));
    const bool gated = (labels.is_object() && labels.contains(kTeamLabel)) || options.namespace_team.contains(ns);
    const json spec = object.value("spec", json::object());
    const bool suspended = spec.contains("suspend") && spec["suspend"].is_boolean() && spec["suspend"].get<bool>();
    if (gated && !suspended) {
      const json patch = json::array({{{"op", "add"}, {"path", "/spec/suspend"}, {"value", true}}});
      response["patchType"] = "JSONPatch";
      response["patch"] = absl::Base64Escape(patch.dump());
      spdlog::info("webhook: Job {}/{} created suspended (it waits for the broker)", ns,
                   object.value("metadata", json::object()).value("name", request.value("name", "")));
    }
  }
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", response}};
}

struct WebhookServer::Impl {
  Impl(const std::string& cert, const std::string& key) : server(cert.c_str(), key.c_str()) {}
  httplib::SSLServer server;
};

WebhookServer::WebhookServer(WebhookOptions options) : options_(std::move(options)) {}

WebhookServer::~WebhookServer() { Stop(); }

absl::Status WebhookServer::Start() {
  impl_ = std::make_unique<Impl>(options_.cert_file, options_.key_file);
  if (!impl_->server.is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot load --webhook-cert ", options_.cert_file, " / --webhook-key ", options_.key_file));
  }
  const KubeOptions kube = options_.options;
  impl_->server.Post(".*", [kube](const httplib::Request& req, httplib::Response& res) {
    json review = json::parse(req.body, nullptr, false);
    if (review.is_discarded() || !review.is_object() || !review.contains("request")) {
      res.status = 400;
      res.set_content(R"({"error":"the body is not an AdmissionReview"})", "application/json");
      return;
    }
    res.set_content(Mutate(review, kube).dump(), "application/json");
  });
  const auto colon = options_.listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(options_.listen.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("--webhook-listen ", options_.listen, ": expected ADDR:PORT"));
  }
  const std::string host = options_.listen.substr(0, colon);
  port_ = port == 0 ? impl_->server.bind_to_any_port(host) : (impl_->server.bind_to_port(host, port) ? port : -1);
  if (port_ <= 0) return absl::UnavailableError(absl::StrCat("--webhook-listen ", options_.listen, ": cannot bind"));
  thread_ = std::thread([this] { impl_->server.listen_after_bind(); });
  return absl::OkStatus();
}

void WebhookServer::Stop() {
  if (impl_) impl_->server.stop();
  if (thread_.joinable()) thread_.join();
}

std::string WebhookServer::address() const {
  return absl::StrCat(options_.listen.substr(0, options_.listen.rfind(':')), ":", port_);
}

}  // namespace tidegate::adapters::kube
