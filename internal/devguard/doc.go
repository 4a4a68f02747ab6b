// Package devguard keeps the local programs' HTTP endpoints (the writer
// of `make run`, with its dev tokens and API Gateway's management
// endpoint, and the consumers' admin endpoints) for the developer at this
// machine: a web page the developer happens to visit must not drive them.
//
// Guard refuses, before any handler runs:
//   - a request whose Host is not a loopback name or address (localhost,
//     *.localhost, 127.0.0.0/8, [::1]) or a host the operator allowed,
//     on the server's own port: a page that rebinds its own name to
//     127.0.0.1 (DNS rebinding) sends its own name as Host;
//   - a cross-origin browser request that changes something (POST, PUT,
//     PATCH, DELETE): net/http's CrossOriginProtection, from Sec-Fetch-Site
//     or Origin; requests without either (curl, the SDKs) pass;
//   - on the routes the caller names (dev-only ones), a body that is not
//     JSON: a page cannot send application/json across origins without a
//     preflight, which the local programs never answer.
//
// Refusals are problem+json (421, 403, 415) naming the reason. Guard says
// nothing about who the caller is beyond that: the routes authenticate
// as they do in AWS (tokens, SigV4).
package devguard
