# Computes the pinned vectors of KeyEncodingTest (key encoding format v2) from the format as
# KeyEncoding's Javadoc documents it, independently of the Java code. Run: python3 this-file.
# Field payloads and JSON parts are written here already in canonical form (exact numbers).
import hashlib, struct
def comp(tag, payload): return bytes([tag]) + struct.pack('>I', len(payload)) + payload
def enc(parts): return b'IDK\x02' + struct.pack('>I', len(parts)) + b''.join(parts)
def text(s): return comp(1, s.encode())
def by(b): return comp(2, b)
def i64(v): return comp(3, struct.pack('>q', v))
def js(s): return comp(4, s.encode())
def chain(links):
    p = struct.pack('>I', len(links))
    for i, s in links:
        p += struct.pack('>I', len(i.encode())) + i.encode() + struct.pack('>I', len(s.encode())) + s.encode()
    return comp(5, p)
def dig(d): return comp(6, d)
def field(s): return comp(7, s.encode())
def header(s): return comp(8, s.encode())
def show(name, parts):
    e = enc(parts); print(name, e.hex(), hashlib.sha256(e).hexdigest())
show('none', [])
show('ab', [text('ab')])
show('empty', [text('')])
show('one', [text('1')])
show('cafe', [text('café \U0001F602')])
show('ab,c', [text('ab'), text('c')])
show('a,bc', [text('a'), text('bc')])
show('int1', [i64(1)])
show('intmin', [i64(-2**63)])
show('bytes', [by(bytes([0,1,0xfe,0xff]))])
show('jsnull', [js('null')])
show('jsobj', [js('{"a":[1,"x"],"b":true}')])
show('chain0', [chain([])])
show('chain2', [chain([('https://issuer.example','user-1'),('https://issuer.example','svc-2')])])
show('digest', [dig(bytes(range(32)))])
show('fieldhdr', [field('"order-1"'), header('order-1')])
show('fieldnum', [field('820982911946154508')])
show('fieldnum9', [field('820982911946154509')])
show('fieldstrnum', [field('"820982911946154508"')])
show('fieldtrue', [field('true')])
show('fieldbig', [field('1.2345678901234567890123456789e+99')])
body = b'{"amount":1999,"currency":"eur","id":"evt_1"}'
d = hashlib.sha256(body).digest(); print('bodydigest', d.hex())
show('default0', [chain([]), dig(d)])
show('defaultalice', [chain([('iss','alice')]), dig(d)])
body2 = b'{"id":820982911946154508,"total":"10.00"}'
d2 = hashlib.sha256(body2).digest(); print('body2digest', d2.hex())
show('default_shopify', [chain([]), dig(d2)])
body3 = b'{"id":820982911946154509,"total":"10.00"}'
print('body3digest', hashlib.sha256(body3).digest().hex())
