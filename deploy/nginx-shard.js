// The shard of the company a request is for, and the node that owns it, for nginx's shard-aware
// balancing (deploy/nginx.conf, docs/cluster.md "Balancing"). The service puts a company in
// shard crc32(companyId) % 64 (mps/domain/shards.py); a session's bearer token is a JWT whose
// payload names the company ("cid"). The signature is not checked here: a forged token only
// picks a node, which then refuses the token. Anything else (an API key, no credential, a token
// that does not parse) has no shard: the empty string, which goes round robin.

var fs = require('fs');

var SHARD_COUNT = 64;

var TABLE = (function () {
    var table = [];
    for (var n = 0; n < 256; n++) {
        var c = n;
        for (var k = 0; k < 8; k++) {
            c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
        }
        table.push(c >>> 0);
    }
    return table;
})();

// zlib's CRC-32 (what Python's zlib.crc32 computes), over the UTF-8 bytes of `text`.
function crc32(text) {
    var bytes = Buffer.from(text, 'utf8');
    var crc = 0xffffffff;
    for (var i = 0; i < bytes.length; i++) {
        crc = TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
    }
    return (crc ^ 0xffffffff) >>> 0;
}

function shard(r) {
    var header = r.headersIn.Authorization || '';
    var token = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]*$/.exec(header);
    if (!token) {
        return '';
    }
    try {
        var claims = JSON.parse(Buffer.from(token[2], 'base64url').toString());
        if (typeof claims.cid !== 'string' || claims.cid === '') {
            return '';
        }
        return String(crc32(claims.cid) % SHARD_COUNT);
    } catch (e) {
        return '';
    }
}

// The upstream to send the request to: its shard's owner in the map deploy/shard-map keeps
// current (lines "12 node2;", the file named by $mps_shards_map), or "any" when the request has
// no shard or the map names no owner for it. The file is read on every request (a few hundred
// bytes, from the page cache), so a new map takes effect without a reload: a reload closes the
// clients' idle kept-alive connections, and a request a client sends on one as it closes fails.
function backend(r) {
    var shard = r.variables.mps_shard;
    if (shard === '') {
        return 'any';
    }
    var text;
    try {
        text = fs.readFileSync(r.variables.mps_shards_map, 'utf8');
    } catch (e) {
        r.error('the shard map cannot be read, sending round robin: ' + e.message);
        return 'any';
    }
    var owner = new RegExp('^' + shard + ' ([A-Za-z0-9_-]+);$', 'm').exec(text);
    return owner ? owner[1] : 'any';
}

export default { shard, backend, crc32 };
