"use strict";
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __exportStar = (this && this.__exportStar) || function(m, exports) {
    for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) __createBinding(exports, m, p);
};
Object.defineProperty(exports, "__esModule", { value: true });
/** Pure mappers between OpenAI's public shapes (Responses, Chat Completions, Embeddings) and the canonical types. */
__exportStar(require("./format-utils"), exports);
__exportStar(require("./usage.mapper"), exports);
__exportStar(require("./responses-request.mapper"), exports);
__exportStar(require("./chat-request.mapper"), exports);
__exportStar(require("./response-object.mapper"), exports);
__exportStar(require("./responses-stream.formatter"), exports);
__exportStar(require("./response-input-items.mapper"), exports);
__exportStar(require("./unstored-text"), exports);
__exportStar(require("./chat-response.mapper"), exports);
__exportStar(require("./chat-stream.formatter"), exports);
__exportStar(require("./embeddings.mapper"), exports);
