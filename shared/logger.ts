import winston from 'winston';

const SECRET_KEYS = /^(authorization|api[-_]?key|x-api-key|x-goog-api-key|token|ownerToken|key|secret|callbackSecret|webhookSecret|password|cookie)$/i;
const SECRET_VALUES = /\b(sy_[A-Za-z0-9]{40}|eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)\b/g;

/** Removes secrets from anything we log: known secret fields and anything shaped like our keys or tokens. */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replace(SECRET_VALUES, '[redacted]');
  if (!value || typeof value !== 'object' || depth > 6) return value;
  if (value instanceof Error) return { name: value.name, message: redact(value.message), stack: value.stack };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redact(v, depth + 1);
  return out;
}

const redactInfo = winston.format((info) => {
  for (const k of Object.keys(info)) {
    if (k !== 'level' && k !== 'message') info[k] = SECRET_KEYS.test(k) ? '[redacted]' : redact(info[k]);
  }
  if (typeof info.message === 'string') info.message = redact(info.message) as string;
  return info;
});

export type Logger = winston.Logger;

export function createLogger(opts: { level?: string; service?: string; silent?: boolean } = {}): Logger {
  return winston.createLogger({
    level: opts.level ?? 'info',
    silent: opts.silent ?? false,
    defaultMeta: { service: opts.service ?? 'switchyard' },
    format: winston.format.combine(redactInfo(), winston.format.timestamp(), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
}
