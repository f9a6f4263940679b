"""The test API server's mutating admission webhooks (fake_apiserver.py):
what a CREATE goes through before it is stored."""
import base64
import copy
import json
import ssl
import urllib.request
import uuid

from fake_store import BY_PLURAL, ApiError, json_patch


def call_mutating_webhooks(store, res, ns, obj):
    """CREATE through the MutatingWebhookConfigurations whose rules and objectSelector
    (matchLabels, matchExpressions Exists/DoesNotExist) match, as the API server does.
    Only clientConfig.url is supported (a service would need cluster DNS); the caBundle
    verifies the webhook. failurePolicy Fail refuses the object when a webhook fails."""
    configs, _ = store.list(BY_PLURAL[("admissionregistration.k8s.io", "mutatingwebhookconfigurations")], None)
    for cfg in configs:
        for hook in cfg.get("webhooks", []):
            rules = hook.get("rules", [])
            if not any(("CREATE" in r.get("operations", []) or "*" in r.get("operations", [])) and
                       res[0] in r.get("apiGroups", []) and res[1] in r.get("apiVersions", []) and
                       res[2] in r.get("resources", []) for r in rules):
                continue
            labels = obj.get("metadata", {}).get("labels") or {}
            sel = hook.get("objectSelector") or {}
            if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
                continue
            if any((e["operator"] == "Exists") != (e["key"] in labels) for e in sel.get("matchExpressions") or []
                   if e["operator"] in ("Exists", "DoesNotExist")):
                continue
            url = (hook.get("clientConfig") or {}).get("url")
            review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": str(uuid.uuid4()), "kind": {"group": res[0], "version": res[1], "kind": res[3]},
                "resource": {"group": res[0], "version": res[1], "resource": res[2]}, "operation": "CREATE",
                "namespace": ns, "name": obj.get("metadata", {}).get("name", ""), "object": obj}}
            try:
                if not url:
                    raise ValueError("only clientConfig.url is supported by the test API server")
                ctx = ssl.create_default_context()
                if (hook.get("clientConfig") or {}).get("caBundle"):
                    ctx = ssl.create_default_context(
                        cadata=base64.b64decode(hook["clientConfig"]["caBundle"]).decode())
                req = urllib.request.Request(url, data=json.dumps(review).encode(),
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, context=ctx, timeout=hook.get("timeoutSeconds", 10)) as r:
                    answer = json.loads(r.read())["response"]
                if not answer.get("allowed", False):
                    raise ApiError(400, "BadRequest", f'admission webhook "{hook["name"]}" denied the request')
                if answer.get("patchType") == "JSONPatch" and answer.get("patch"):
                    obj = json_patch(copy.deepcopy(obj), json.loads(base64.b64decode(answer["patch"])))
            except ApiError:
                raise
            except Exception as e:
                if hook.get("failurePolicy", "Fail") == "Fail":
                    raise ApiError(500, "InternalError", f'Internal error occurred: failed calling webhook '
                                   f'"{hook["name"]}": {e}')
    return obj
