"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DROP_REASONS = exports.PROVIDER_SORTS = exports.MAX_PRICE_FIELDS = void 0;
/** `max_price` ceilings: every price field except `cached_prompt`. */
exports.MAX_PRICE_FIELDS = [
    'prompt',
    'completion',
    'image',
    'audio',
    'request',
    'video_per_second',
    'stt_per_minute',
    'tts_per_million_characters',
];
exports.PROVIDER_SORTS = ['price', 'latency', 'throughput'];
exports.DROP_REASONS = [
    'ignore',
    'only',
    'max_price',
    'data_residency',
    'require_parameters',
    'model_type',
    'no_api_key',
    'unhealthy',
    'allow_fallbacks',
];
