// A small Kubernetes REST client on libcurl: where the API server is and who
// we are (kubeconfig or the in-cluster service account), requests with JSON
// bodies, and watch streams read line by line.
//
// TLS is verified against the kubeconfig's CA (certificate-authority or
// -data) or the service account's ca.crt, else the system's CAs; nothing
// turns verification off. A token file is read again for every request (it
// rotates in a Pod).
//
// Threading: a KubeClient is immutable after construction; every call uses
// its own curl handle, so calls may run on several threads at once.
#ifndef TIDEGATE_ADAPTERS_KUBERNETES_KUBE_CLIENT_H_
#define TIDEGATE_ADAPTERS_KUBERNETES_KUBE_CLIENT_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tidegate::adapters::kube {

struct KubeConnection {
  std::string server;          // https://host:port (or http:// for tests).
  std::string ca_file, ca_pem;  // the API server's CA: a file or PEM text.
  std::string cert_file, cert_pem, key_file, key_pem;  // a client certificate.
  std::string token, token_file;                       // a bearer token.
  std::string name_space;      // the context's (or the service account's) namespace.
  std::string source;          // where this came from, for logs.
};

// Reads a kubeconfig: `path` if set, else the first file of $KUBECONFIG that
// exists, else ~/.kube/config. `context` empty = current-context. Relative
// file paths in it are relative to the kubeconfig's folder.
absl::StatusOr<KubeConnection> LoadKubeconfig(const std::string& path, const std::string& context);
// The Pod's service account: $KUBERNETES_SERVICE_HOST/_PORT and the files
// under `dir` (token, ca.crt, namespace).
absl::StatusOr<KubeConnection> LoadInCluster(const std::string& dir = "/var/run/secrets/kubernetes.io/serviceaccount");

struct KubeResponse {
  long code = 0;
  std::string body;
};

class KubeClient {
 public:
  explicit KubeClient(KubeConnection connection);
  // One request; any HTTP answer is a response (check `code`), only a
  // transport failure (refused, TLS, timeout) is an error (UNAVAILABLE).
  absl::StatusOr<KubeResponse> Request(const std::string& method, const std::string& path,
                                       const std::string& body = "",
                                       const std::string& content_type = "application/json") const;
  // A watch: GET `path` and hand each newline-terminated line to `on_line`
  // until the server ends the stream, `on_line` returns false, or `*stop`.
  // Returns the HTTP code (200 for an ended stream) or a transport error.
  absl::StatusOr<long> Stream(const std::string& path, const std::function<bool(const std::string&)>& on_line,
                              const std::atomic<bool>* stop) const;
  const KubeConnection& connection() const { return connection_; }

 private:
  KubeConnection connection_;
};

}  // namespace tidegate::adapters::kube

#endif  // TIDEGATE_ADAPTERS_KUBERNETES_KUBE_CLIENT_H_
