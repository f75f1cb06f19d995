// The SSRF guard every outbound URL of the web tools passes (SPEC "Security": private, loopback,
// link-local, metadata and ULA addresses refused; DNS failure fails closed; every redirect hop
// re-checked). The check and the connection use the same address: the guarded dispatcher's DNS
// lookup refuses what it must and hands the checked address to the socket, so a name that
// resolves to a public address when checked and a private one a moment later (DNS rebinding)
// never reaches the private one. Literal IP hosts (which skip DNS) are checked before the request.
//
// Only global unicast passes: ipaddr.js classifies the address, and anything it does not call
// `unicast` (private, loopback, link-local — where cloud metadata lives —, carrier-grade NAT,
// unique-local, multicast, reserved, 6to4/Teredo/NAT64 wrappers, unspecified …) is refused.
// IPv4-mapped IPv6 is judged as the IPv4 it carries. An install may let chosen private ranges
// through (HERMES_WEB_ALLOW_CIDRS: an in-cluster SearXNG, an intranet wiki) — never by manifest.
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { Agent } from 'undici';

/** A URL the guard refused; `reason` is safe to show to the model. */
export class UrlRefused extends Error {
  override name = 'UrlRefused';
  constructor(readonly url: string, readonly reason: string) {
    super(`Refused ${url}: ${reason}`);
  }
}

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

export interface NetPolicy {
  /** Private ranges the install allows anyway (CIDR strings, e.g. "10.20.0.0/16"). */
  allowCidrs: readonly string[];
  /** The resolver (tests inject one). @defaultValue node:dns lookup with all addresses */
  resolve?: (host: string) => Promise<readonly LookupAddress[]>;
}

const blockedNames = /^(localhost|localhost\.localdomain|metadata|metadata\.google\.internal|instance-data|instance-data\.ec2\.internal)\.?$|\.localhost\.?$/i;

function parseCidrs(list: readonly string[]): Cidr[] {
  return list.map((c) => {
    try {
      return ipaddr.parseCIDR(c.trim());
    } catch {
      throw new Error(`"${c}" is not a CIDR range (e.g. 10.20.0.0/16)`);
    }
  });
}

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/** Why `address` may not be reached, or undefined when it may. */
export function addressRefusal(address: string, allow: readonly Cidr[]): string | undefined {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.process(address); // IPv4-mapped IPv6 → the IPv4
  } catch {
    return `"${address}" is not an IP address`;
  }
  if (allow.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits))) return undefined;
  const range = ip.range();
  if (range !== 'unicast') return `${address} is a ${range} address (only public addresses are reachable)`;
  // ipaddr.js calls every IPv6 address outside its special ranges `unicast`, IPv4-compatible
  // `::127.0.0.1` included; the global unicast space is 2000::/3 and nothing else.
  if (ip.kind() === 'ipv6' && !ip.match(GLOBAL_UNICAST_V6)) return `${address} is not a global unicast IPv6 address (only public addresses are reachable)`;
  return undefined;
}

export interface UrlGuard {
  /** Throws UrlRefused unless the URL may be fetched (scheme, credentials, literal-IP host, names). */
  checkUrl(url: string): URL;
  /** An undici dispatcher whose connections go only to checked addresses. */
  readonly dispatcher: Agent;
  close(): Promise<void>;
}

const defaultResolve = (host: string) => new Promise<LookupAddress[]>((resolve, reject) => {
  dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
});

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export function urlGuard(policy: NetPolicy, agentOptions: Agent.Options = {}): UrlGuard {
  const allow = parseCidrs(policy.allowCidrs);
  const resolve = policy.resolve ?? defaultResolve;

  /** net.connect's lookup: resolve, refuse the whole name when any address is refused, connect to what was checked. */
  const lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then((addresses) => {
      if (addresses.length === 0) throw Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' });
      for (const a of addresses) {
        const refusal = addressRefusal(a.address, allow);
        if (refusal) throw Object.assign(new Error(`${hostname} resolves to ${refusal}`), { code: 'EHERMESSSRF' });
      }
      const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      if (wanted.length === 0) throw Object.assign(new Error(`${hostname} has no IPv${options.family} address`), { code: 'ENOTFOUND' });
      if (options.all) callback(null, [...wanted]);
      else callback(null, wanted[0]!.address, wanted[0]!.family);
    }).catch((err: NodeJS.ErrnoException) => callback(err, ''));
  };

  const dispatcher = new Agent({ ...agentOptions, connect: { ...agentOptions.connect, lookup } as Agent.Options['connect'] });

  return {
    dispatcher,
    checkUrl(raw: string): URL {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw new UrlRefused(raw, 'not a valid absolute URL');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UrlRefused(raw, `only http and https URLs can be fetched, not ${url.protocol}`);
      if (url.username || url.password) throw new UrlRefused(raw, 'URLs with credentials are not fetched');
      const host = url.hostname.replace(/^\[|\]$/g, '');
      if (ipaddr.isValid(host)) {
        const refusal = addressRefusal(host, allow);
        if (refusal) throw new UrlRefused(raw, refusal);
      } else if (blockedNames.test(host)) {
        throw new UrlRefused(raw, `${host} is an internal name`);
      }
      return url;
    },
    close: () => dispatcher.close(),
  };
}

/** The guard's refusal hidden in a fetch error (the lookup's), as UrlRefused; undefined for other errors. */
export function refusalIn(err: unknown, url: string): UrlRefused | undefined {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: string }).code;
    if (code === 'EHERMESSSRF') return new UrlRefused(url, (e as Error).message);
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return new UrlRefused(url, `the name does not resolve (${(e as Error).message}); DNS failures fail closed`);
  }
  return undefined;
}
