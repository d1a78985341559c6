"""The interactive API explorer at /api/docs (development only, decisions 0 and 4).

Self-contained: it loads the OpenAPI document with the session token the user pastes (the
document is not public) and sends requests from the browser with the same token.

One constant, registered with `static_page`: its Content Security Policy allows exactly its one
`<script>` and one `<style>` by their hashes (`mps.http.security`). Keep those tags without
attributes, and keep event handlers and styles out of the markup (a strict policy blocks
`onclick=` and `style=`); handlers are assigned from the script.
"""

from __future__ import annotations

from mps.http.security import static_page

__all__ = ["EXPLORER_HTML"]

EXPLORER_HTML = static_page("""<!doctype html><html lang=en><head><meta charset=utf-8>
<title>Merchant Payments API explorer</title>
<style>
body{font-family:system-ui,sans-serif;margin:0;display:flex;height:100vh;color:#1a1f36}
nav{width:340px;overflow:auto;border-right:1px solid #e3e8ee;padding:12px}
section{flex:1;overflow:auto;padding:16px}
button.op{display:block;width:100%;text-align:left;border:0;background:none;padding:4px;
cursor:pointer;font:13px monospace}button.op:hover{background:#f4f5f7}
.m{display:inline-block;width:52px;font-weight:bold}
textarea,input{width:100%;box-sizing:border-box;font:13px monospace}
pre{background:#f6f8fa;padding:8px;white-space:pre-wrap}
</style></head><body>
<nav><label>Session token<input id=token placeholder="eyJ..."></label>
<button id=load>Load API</button><div id=ops></div></nav>
<section><h2 id=title>Paste a session token and load the API</h2>
<p id=summary></p><label>Path<input id=path></label>
<label>Body (JSON)<textarea id=body rows=8></textarea></label>
<label>Idempotency-Key (optional)<input id=idem></label>
<button id=send>Send</button><pre id=out></pre></section>
<script>
let method = 'GET';
const $ = (id) => document.getElementById(id);
const auth = () => ({'Authorization': 'Bearer ' + $('token').value.trim()});
$('load').onclick = async () => {
  const response = await fetch('/api/v1/developer/openapi.json', {headers: auth()});
  const doc = await response.json();
  if (!response.ok) { $('out').textContent = JSON.stringify(doc, null, 2); return; }
  $('ops').innerHTML = '';
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [verb, op] of Object.entries(ops)) {
      const b = document.createElement('button');
      b.className = 'op';
      b.innerHTML = '<span class=m></span><span></span>';
      b.children[0].textContent = verb.toUpperCase();
      b.children[1].textContent = path;
      b.onclick = () => {
        method = verb.toUpperCase();
        $('title').textContent = method + ' ' + path;
        $('summary').textContent = (op.summary || '') + ' ' + (op.description || '');
        $('path').value = path;
        const schema = op.requestBody && op.requestBody.content['application/json'].schema;
        $('body').value = schema ? JSON.stringify(example(schema), null, 2) : '';
      };
      $('ops').appendChild(b);
    }
  }
};
function example(schema) {
  if (schema.type === 'object') {
    const out = {};
    for (const name of (schema.required || [])) out[name] = example(schema.properties[name]);
    return out;
  }
  if (schema.type === 'array') return [];
  if (schema.enum) return schema.enum[0];
  if (schema.type === 'integer') return schema.minimum || 0;
  if (schema.type === 'boolean') return false;
  return '';
}
$('send').onclick = async () => {
  const headers = auth();
  const init = {method, headers};
  if ($('body').value.trim()) {
    headers['Content-Type'] = 'application/json';
    init.body = $('body').value;
  }
  if ($('idem').value) headers['Idempotency-Key'] = $('idem').value;
  const response = await fetch($('path').value, init);
  const text = await response.text();
  let shown = text;
  try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) {}
  $('out').textContent = response.status + ' ' + response.statusText + '\\n' + shown;
};
</script></body></html>""")
