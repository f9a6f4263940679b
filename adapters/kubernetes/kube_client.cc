#include "adapters/kubernetes/kube_client.h"

#include <curl/curl.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace tidegate::adapters::kube {

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

std::string Relative(const std::string& dir, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return absl::StrCat(dir, "/", path);
}

// A named entry of a kubeconfig list (clusters, users, contexts).
std::optional<YAML::Node> Named(const YAML::Node& list, const std::string& name, const char* what) {
  if (list && list.IsSequence()) {
    for (const auto& item : list) {
      if (item["name"] && item["name"].as<std::string>() == name && item[what]) return item[what];
    }
  }
  return std::nullopt;
}

std::string Str(const YAML::Node& n, const char* key) {
  return n && n[key] && n[key].IsScalar() ? n[key].as<std::string>() : "";
}

absl::StatusOr<std::string> Decode(const std::string& b64, const std::string& field) {
  std::string out;
  if (!absl::Base64Unescape(b64, &out)) return absl::InvalidArgumentError(absl::StrCat(field, ": not base64"));
  return out;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct Lines {
  const std::function<bool(const std::string&)>* on_line;
  std::string pending;
  bool stopped = false;
};
size_t SplitLines(char* data, size_t size, size_t n, void* arg) {
  auto* lines = static_cast<Lines*>(arg);
  lines->pending.append(data, size * n);
  size_t start = 0, nl;
  while ((nl = lines->pending.find('\n', start)) != std::string::npos) {
    if (!(*lines->on_line)(lines->pending.substr(start, nl - start))) {
      lines->stopped = true;
      return 0;  // aborts the transfer.
    }
    start = nl + 1;
  }
  lines->pending.erase(0, start);
  return size * n;
}

int StopCheck(void* stop, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return stop && static_cast<const std::atomic<bool>*>(stop)->load() ? 1 : 0;
}

struct Handle {
  CURL* curl = curl_easy_init();
  curl_slist* headers = nullptr;
  std::string ca, cert, key;  // blobs must outlive the transfer.
  ~Handle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
};

absl::Status Prepare(const KubeConnection& c, const std::string& method, const std::string& path, Handle* h) {
  CURL* curl = h->curl;
  curl_easy_setopt(curl, CURLOPT_URL, absl::StrCat(c.server, path).c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!c.ca_pem.empty()) {
    h->ca = c.ca_pem;
    curl_blob blob{h->ca.data(), h->ca.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
  } else if (!c.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, c.ca_file.c_str());
  }
  if (!c.cert_pem.empty()) {
    h->cert = c.cert_pem;
    curl_blob blob{h->cert.data(), h->cert.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &blob);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!c.cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, c.cert_file.c_str());
  }
  if (!c.key_pem.empty()) {
    h->key = c.key_pem;
    curl_blob blob{h->key.data(), h->key.size(), CURL_BLOB_NOCOPY};
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &blob);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!c.key_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY, c.key_file.c_str());
  }
  std::string token = c.token;
  if (!c.token_file.empty()) {
    auto t = ReadFile(c.token_file);
    if (!t.ok()) return absl::UnavailableError(absl::StrCat("token file: ", t.status().message()));
    token = std::string(absl::StripAsciiWhitespace(*t));
  }
  h->headers = curl_slist_append(h->headers, "Accept: application/json");
  if (!token.empty()) h->headers = curl_slist_append(h->headers, absl::StrCat("Authorization: Bearer ", token).c_str());
  h->headers = curl_slist_append(h->headers, "User-Agent: tidegate-agent");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KubeConnection> LoadKubeconfig(const std::string& path_flag, const std::string& context_flag) {
  std::string path = path_flag;
  if (path.empty()) {
    if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
      for (absl::string_view p : absl::StrSplit(env, ':', absl::SkipEmpty())) {
        if (Exists(std::string(p))) {
          path = std::string(p);
          break;
        }
      }
    }
    if (path.empty()) {
      const char* home = std::getenv("HOME");
      path = absl::StrCat(home ? home : "", "/.kube/config");
    }
  }
  auto text = ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("kubeconfig: ", text.status().message()));
  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  YAML::Node doc;
  try {
    doc = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": ", e.what()));
  }
  const std::string context = context_flag.empty() ? Str(doc, "current-context") : context_flag;
  if (context.empty()) return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": no current-context"));
  auto found_ctx = Named(doc["contexts"], context, "context");
  if (!found_ctx) return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": context '", context, "' not found"));
  const YAML::Node ctx = *found_ctx;
  auto found_cluster = Named(doc["clusters"], Str(ctx, "cluster"), "cluster");
  if (!found_cluster) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig ", path, ": cluster '", Str(ctx, "cluster"), "' of context '", context, "' not found"));
  }
  const YAML::Node cluster = *found_cluster;
  const YAML::Node user = Named(doc["users"], Str(ctx, "user"), "user").value_or(YAML::Node());
  KubeConnection c;
  c.source = absl::StrCat("kubeconfig ", path, " context ", context);
  c.server = Str(cluster, "server");
  if (c.server.empty()) return absl::InvalidArgumentError(absl::StrCat("kubeconfig ", path, ": cluster has no server"));
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  if (Str(cluster, "insecure-skip-tls-verify") == "true") {
    return absl::InvalidArgumentError(absl::StrCat(
        "kubeconfig ", path, ": insecure-skip-tls-verify is not supported; give certificate-authority(-data)"));
  }
  c.ca_file = Relative(dir, Str(cluster, "certificate-authority"));
  if (auto d = Str(cluster, "certificate-authority-data"); !d.empty()) {
    auto pem = Decode(d, "certificate-authority-data");
    if (!pem.ok()) return pem.status();
    c.ca_pem = *pem;
  }
  c.cert_file = Relative(dir, Str(user, "client-certificate"));
  c.key_file = Relative(dir, Str(user, "client-key"));
  if (auto d = Str(user, "client-certificate-data"); !d.empty()) {
    auto pem = Decode(d, "client-certificate-data");
    if (!pem.ok()) return pem.status();
    c.cert_pem = *pem;
  }
  if (auto d = Str(user, "client-key-data"); !d.empty()) {
    auto pem = Decode(d, "client-key-data");
    if (!pem.ok()) return pem.status();
    c.key_pem = *pem;
  }
  c.token = Str(user, "token");
  c.token_file = Relative(dir, Str(user, "tokenFile"));
  c.name_space = Str(ctx, "namespace");
  if (c.name_space.empty()) c.name_space = "default";
  return c;
}

absl::StatusOr<KubeConnection> LoadInCluster(const std::string& dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host) return absl::FailedPreconditionError("not in a cluster: KUBERNETES_SERVICE_HOST is not set");
  KubeConnection c;
  c.source = absl::StrCat("in-cluster service account (", dir, ")");
  const std::string h = host;
  c.server = absl::StrCat("https://", h.find(':') != std::string::npos ? absl::StrCat("[", h, "]") : h, ":",
                          port && *port ? port : "443");
  c.ca_file = dir + "/ca.crt";
  c.token_file = dir + "/token";
  if (!Exists(c.token_file)) return absl::NotFoundError(absl::StrCat("in-cluster: no ", c.token_file));
  if (!Exists(c.ca_file)) return absl::NotFoundError(absl::StrCat("in-cluster: no ", c.ca_file));
  auto ns = ReadFile(dir + "/namespace");
  c.name_space = ns.ok() ? std::string(absl::StripAsciiWhitespace(*ns)) : "default";
  return c;
}

KubeClient::KubeClient(KubeConnection connection) : connection_(std::move(connection)) { GlobalInit(); }

absl::StatusOr<KubeResponse> KubeClient::Request(const std::string& method, const std::string& path,
                                                 const std::string& body, const std::string& content_type) const {
  Handle h;
  if (!h.curl) return absl::InternalError("curl_easy_init failed");
  if (auto s = Prepare(connection_, method, path, &h); !s.ok()) return s;
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    h.headers = curl_slist_append(h.headers, absl::StrCat("Content-Type: ", content_type).c_str());
    curl_easy_setopt(h.curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h.curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(h.curl, CURLOPT_HTTPHEADER, h.headers);
  curl_easy_setopt(h.curl, CURLOPT_TIMEOUT_MS, 30000L);
  KubeResponse r;
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &r.body);
  if (CURLcode rc = curl_easy_perform(h.curl); rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(method, " ", connection_.server, path, ": ", curl_easy_strerror(rc)));
  }
  curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &r.code);
  return r;
}

absl::StatusOr<long> KubeClient::Stream(const std::string& path, const std::function<bool(const std::string&)>& on_line,
                                        const std::atomic<bool>* stop) const {
  Handle h;
  if (!h.curl) return absl::InternalError("curl_easy_init failed");
  if (auto s = Prepare(connection_, "GET", path, &h); !s.ok()) return s;
  curl_easy_setopt(h.curl, CURLOPT_HTTPHEADER, h.headers);
  // A silent stream is a dead one: the server sends bookmarks well within this.
  curl_easy_setopt(h.curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h.curl, CURLOPT_LOW_SPEED_TIME, 90L);
  Lines lines{&on_line, "", false};
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, SplitLines);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &lines);
  curl_easy_setopt(h.curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h.curl, CURLOPT_XFERINFOFUNCTION, StopCheck);
  curl_easy_setopt(h.curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(stop));
  CURLcode rc = curl_easy_perform(h.curl);
  long code = 0;
  curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &code);
  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && lines.stopped) || (rc == CURLE_ABORTED_BY_CALLBACK)) {
    if (!lines.pending.empty() && rc == CURLE_OK && code != 200) on_line(lines.pending);  // a Status body.
    return code;
  }
  return absl::UnavailableError(absl::StrCat("watch ", connection_.server, path, ": ", curl_easy_strerror(rc)));
}

}  // namespace tidegate::adapters::kube
