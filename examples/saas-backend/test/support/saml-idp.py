"""
A SAML identity provider for the tests, on loopback: pysaml2's saml2.server.Server (another XML
stack than the backend's: its signatures are xmlsec1's), behind a small WSGI server.

Run with Debian's /usr/bin/python3 (python3-pysaml2, xmlsec1), not a pyenv python:

    /usr/bin/python3 saml-idp.py

It prints one JSON line, {"url": ...}, once it listens on 127.0.0.1 (a free port). Routes:

    GET  /metadata?keys=a,b      the IdP metadata listing the signing certificates of keys a and/or b
    POST /sp                     body: an SP's metadata XML; the IdP now answers that SP
    POST /next                   JSON: the next response's user and options (used once)
    GET  /sso?SAMLRequest=...    HTTP-Redirect AuthnRequest -> an auto-submitting form to the ACS
    GET  /idp-initiated?sp=...   an unsolicited response for that SP's ACS (no InResponseTo)

The options of /next, each what a test needs of a real response:
    user            {"nameId", "email", "name"}
    key             "a" (default), "b" (the rollover's next key) or "evil" (a key nobody trusts,
                    with its certificate in KeyInfo, as every pysaml2 signature has)
    signAssertion   default true;  signResponse default false
    encrypt         encrypt the assertion to the SP's certificate of its metadata
    sha1            sign and digest with SHA-1
    audience        another Audience than the SP's entity ID
    destination     another ACS (Destination and Recipient) than the request's
    expired         the assertion's NotOnOrAfter ten minutes ago
    inResponseTo    another InResponseTo than the request's ID
    issuer          another Issuer than the IdP's entity ID (signed with its trusted key all the same)
"""

import base64
import html
import json
import os
import subprocess
import sys
import tempfile
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

import saml2.entity
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.assertion import Policy
from saml2.config import IdPConfig
from saml2.metadata import entity_descriptor
from saml2.saml import NAME_FORMAT_URI, NAMEID_FORMAT_UNSPECIFIED, NameID
from saml2.server import Server
from saml2.xmldsig import DIGEST_SHA1, DIGEST_SHA256, SIG_RSA_SHA1, SIG_RSA_SHA256

workdir = tempfile.mkdtemp(prefix="saml-idp-")

# pysaml2 encrypts with 3DES by default, which this xmlsec1 (OpenSSL 3) refuses: AES-256-CBC, with
# the key transported by RSA-OAEP, as IdPs do today.
aes256_cbc = "http://www.w3.org/2001/04/xmlenc#aes256-cbc"
default_encryption_part = saml2.entity.pre_encryption_part
saml2.entity.pre_encryption_part = lambda **kwargs: default_encryption_part(msg_enc=aes256_cbc, **kwargs)


def make_key(name):
    key = os.path.join(workdir, f"{name}.key")
    cert = os.path.join(workdir, f"{name}.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", f"/CN=test idp {name}", "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
    )
    return key, cert


keys = {name: make_key(name) for name in ("a", "b", "evil")}
servers = {}
sp_metadata = []
state = {"next": {}}


def config_for(base, key_name):
    key, cert = keys[key_name]
    return {
        "entityid": f"{base}/metadata",
        "service": {
            "idp": {
                "endpoints": {"single_sign_on_service": [(f"{base}/sso", BINDING_HTTP_REDIRECT)]},
                "policy": {"default": {"lifetime": {"minutes": 5}, "attribute_restrictions": None, "name_form": NAME_FORMAT_URI}},
                "name_id_format": [NAMEID_FORMAT_UNSPECIFIED],
                "want_authn_requests_signed": False,
            }
        },
        "key_file": key,
        "cert_file": cert,
        "xmlsec_binary": "/usr/bin/xmlsec1",
        "metadata": {},
    }


def server(key_name):
    idp = servers[key_name]
    for xml in sp_metadata[idp.loaded:]:
        idp.metadata.load("inline", xml)
    idp.loaded = len(sp_metadata)
    return idp


def metadata_xml(base, names):
    documents = []
    for name in names:
        documents.append(str(entity_descriptor(IdPConfig().load(config_for(base, name)))))
    if len(documents) == 1:
        return documents[0]
    # Several signing certificates: the first document's descriptor with the others' KeyDescriptors.
    first, *others = documents
    marker = "<ns0:KeyDescriptor"
    extra = "".join(doc[doc.index(marker) : doc.index("</ns0:KeyDescriptor>") + len("</ns0:KeyDescriptor>")] for doc in others)
    at = first.index(marker)
    return first[:at] + extra + first[at:]


def pem_body(path):
    with open(path) as handle:
        return handle.read()


def respond(base, sp_entity_id, acs, in_response_to):
    options = state["next"]
    state["next"] = {}
    user = options.get("user") or {"nameId": "someone@example.test", "email": "someone@example.test"}
    idp = server(options.get("key", "a"))
    # Sent under their URI names (urn:oid:...), as Shibboleth-style IdPs do.
    identity = {"mail": [user["email"]]} if user.get("email") else {}
    if user.get("name"):
        identity["displayName"] = [user["name"]]
    destination = options.get("destination") or acs
    policy = Policy({"default": {"lifetime": {"minutes": -10 if options.get("expired") else 5}, "attribute_restrictions": None, "name_form": NAME_FORMAT_URI}}, mds=idp.metadata)
    encrypt = bool(options.get("encrypt"))
    encrypt_cert = None
    if encrypt:
        certs = idp.metadata.certs(sp_entity_id, "spsso", use="encryption")
        body = "".join(certs[0].split())
        encrypt_cert = "\n".join(body[at : at + 64] for at in range(0, len(body), 64))
    sha1 = bool(options.get("sha1"))
    response = idp.create_authn_response(
        identity,
        options.get("inResponseTo", in_response_to),
        destination,
        options.get("audience") or sp_entity_id,
        name_id=NameID(format=NAMEID_FORMAT_UNSPECIFIED, text=user["nameId"]),
        sign_assertion=options.get("signAssertion", True),
        sign_response=options.get("signResponse", False),
        encrypt_assertion=encrypt,
        encrypt_cert_assertion=encrypt_cert,
        sign_alg=SIG_RSA_SHA1 if sha1 else SIG_RSA_SHA256,
        digest_alg=DIGEST_SHA1 if sha1 else DIGEST_SHA256,
        issuer=options.get("issuer"),
        release_policy=policy,
    )
    return str(response)


def form(acs, saml_response, relay_state):
    encoded = base64.b64encode(saml_response.encode()).decode()
    relay = f'<input type="hidden" name="RelayState" value="{html.escape(relay_state)}">' if relay_state else ""
    return (
        f'<!DOCTYPE html><html><body onload="document.forms[0].submit()"><form method="post" action="{html.escape(acs)}">'
        f'<input type="hidden" name="SAMLResponse" value="{encoded}">{relay}<noscript><button>Continue</button></noscript></form></body></html>'
    )


def acs_of(sp_entity_id):
    idp = server("a")
    for service in idp.metadata.assertion_consumer_service(sp_entity_id, BINDING_HTTP_POST):
        return service["location"]
    raise KeyError(sp_entity_id)


def app(environ, start_response):
    base = state["base"]
    path = environ["PATH_INFO"]
    query = {key: values[0] for key, values in parse_qs(environ.get("QUERY_STRING", "")).items()}
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""

    def answer(status, content, kind="text/plain"):
        data = content.encode() if isinstance(content, str) else content
        start_response(status, [("Content-Type", kind), ("Content-Length", str(len(data)))])
        return [data]

    try:
        if path == "/metadata":
            return answer("200 OK", metadata_xml(base, query.get("keys", "a").split(",")), "application/samlmetadata+xml")
        if path == "/sp" and environ["REQUEST_METHOD"] == "POST":
            sp_metadata.append(body.decode())
            return answer("204 No Content", "")
        if path == "/next" and environ["REQUEST_METHOD"] == "POST":
            state["next"] = json.loads(body or b"{}")
            return answer("204 No Content", "")
        if path == "/sso":
            request = server("a").parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
            message = request.message
            acs = message.assertion_consumer_service_url or acs_of(message.issuer.text)
            state["lastRequest"] = {"id": message.id, "issuer": message.issuer.text, "acs": acs, "signed": "Signature" in query}
            return answer("200 OK", form(acs, respond(base, message.issuer.text, acs, message.id), query.get("RelayState")), "text/html")
        if path == "/last-request":
            return answer("200 OK", json.dumps(state.get("lastRequest")), "application/json")
        if path == "/idp-initiated":
            sp = query["sp"]
            acs = acs_of(sp)
            return answer("200 OK", form(acs, respond(base, sp, acs, None), query.get("RelayState")), "text/html")
        return answer("404 Not Found", "not found")
    except Exception as error:  # the test reads what went wrong
        cause = f" (caused by {error.__cause__})" if error.__cause__ else ""
        return answer("500 Internal Server Error", f"{type(error).__name__}: {error}{cause}")


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    httpd = make_server("127.0.0.1", 0, app, handler_class=QuietHandler)
    base = f"http://127.0.0.1:{httpd.server_port}"
    state["base"] = base
    for name in keys:
        idp = Server(config=IdPConfig().load(config_for(base, name)))
        idp.loaded = 0
        encrypt = idp.sec.encrypt_assertion
        idp.sec.encrypt_assertion = lambda statement, key, template, key_type="aes-256", node_xpath=None, _encrypt=encrypt: _encrypt(statement, key, template, "aes-256", node_xpath)
        servers[name] = idp
    print(json.dumps({"url": base}), flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
