"use strict";
/** The catalog file (config/catalog.json), as decisions.md section 1 defines it. */
Object.defineProperty(exports, "__esModule", { value: true });
exports.MEDIA_OPERATIONS = exports.PRICE_FIELDS = exports.MODEL_TYPES = exports.PROVIDER_KINDS = void 0;
exports.PROVIDER_KINDS = ['openai', 'anthropic', 'gemini', 'replicate'];
exports.MODEL_TYPES = ['chat', 'embedding', 'image', 'video', 'audio', 'upscale'];
/** Price names are the same as the `max_price` ceilings of the routing object. RUB. */
exports.PRICE_FIELDS = [
    'prompt', // per 1,000,000 input tokens
    'completion', // per 1,000,000 output tokens
    'cached_prompt', // per 1,000,000 cached input tokens (optional; falls back to prompt)
    'image', // per image
    'audio', // per 1,000,000 audio tokens
    'request', // per request
    'video_per_second',
    'stt_per_minute',
    'tts_per_million_characters',
];
exports.MEDIA_OPERATIONS = ['extend', 'upscale_1080p', 'upscale_4k'];
