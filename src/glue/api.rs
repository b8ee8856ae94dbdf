//! Access to the Redis module API function table. Every function this
//! module calls is checked for presence when the module loads, so a missing
//! one refuses the load instead of failing inside a command.

use redis_module::raw;

/// The API function `$name`, or a panic (caught by the command guard) if
/// the server lacks it, which the load-time check rules out.
macro_rules! api {
    ($name:ident) => {{
        #[allow(unused_unsafe)]
        // SAFETY: reads an entry of the API table, written once by `Export_RedisModule_Init` at
        // load, before any command or callback runs.
        let function = unsafe { redis_module::raw::$name };
        match function {
            Some(function) => function,
            None => $crate::glue::api::missing(stringify!($name)),
        }
    }};
}
pub(crate) use api;

#[cold]
pub(crate) fn missing(name: &str) -> ! {
    panic!("Redis module API {name} is not available on this server")
}

macro_rules! required {
    ($($name:ident),* $(,)?) => {
        /// The names of required API functions this server lacks.
        pub(crate) fn missing_apis() -> Vec<&'static str> {
            let mut missing = Vec::new();
            // SAFETY: as above: reads the API table, filled at load.
            $( if unsafe { raw::$name }.is_none() { missing.push(stringify!($name)); } )*
            missing
        }
    };
}

required!(
    RedisModule_OpenKey,
    RedisModule_CloseKey,
    RedisModule_KeyType,
    RedisModule_ValueLength,
    RedisModule_ListPush,
    RedisModule_ListPop,
    RedisModule_ListGet,
    RedisModule_ListDelete,
    RedisModule_ListInsert,
    RedisModule_ZsetAdd,
    RedisModule_ZsetRem,
    RedisModule_ZsetScore,
    RedisModule_ZsetFirstInScoreRange,
    RedisModule_ZsetRangeCurrentElement,
    RedisModule_ZsetRangeNext,
    RedisModule_ZsetRangeEndReached,
    RedisModule_ZsetRangeStop,
    RedisModule_HashGet,
    RedisModule_HashSet,
    RedisModule_StringDMA,
    RedisModule_StringSet,
    RedisModule_SetAbsExpire,
    RedisModule_GetAbsExpire,
    RedisModule_DeleteKey,
    RedisModule_ScanKey,
    RedisModule_ScanCursorCreate,
    RedisModule_ScanCursorDestroy,
    RedisModule_ScanCursorRestart,
    RedisModule_DbSize,
    RedisModule_Scan,
    RedisModule_CreateString,
    RedisModule_CreateStringFromLongLong,
    RedisModule_FreeString,
    RedisModule_RetainString,
    RedisModule_StringPtrLen,
    RedisModule_Replicate,
    RedisModule_Call,
    RedisModule_CallReplyType,
    RedisModule_CallReplyInteger,
    RedisModule_FreeCallReply,
    RedisModule_CallReplyArrayElement,
    RedisModule_CallReplyStringPtr,
    RedisModule_CallReplyLength,
    RedisModule_SelectDb,
    RedisModule_SubscribeToKeyspaceEvents,
    RedisModule_GetSelectedDb,
    RedisModule_NotifyKeyspaceEvent,
    RedisModule_SignalModifiedKey,
    RedisModule_SetModuleOptions,
    RedisModule_GetContextFlags,
    RedisModule_GetCurrentUserName,
    RedisModule_GetModuleUserFromUserName,
    RedisModule_FreeModuleUser,
    RedisModule_ACLCheckKeyPermissions,
    RedisModule_ACLAddLogEntry,
    RedisModule_ACLCheckChannelPermissions,
    RedisModule_BlockClientOnKeys,
    RedisModule_SignalKeyAsReady,
    RedisModule_UnblockClient,
    RedisModule_GetBlockedClientPrivateData,
    RedisModule_SetDisconnectCallback,
    RedisModule_SubscribeToKeyspaceEvents,
    RedisModule_CreateTimer,
    RedisModule_StopTimer,
    RedisModule_GetSelectedDb,
    RedisModule_SelectDb,
    RedisModule_CreateCommand,
    RedisModule_CreateSubcommand,
    RedisModule_GetCommand,
    RedisModule_SetCommandInfo,
    RedisModule_ReplyWithError,
    RedisModule_ReplyWithSimpleString,
    RedisModule_ReplyWithStringBuffer,
    RedisModule_ReplyWithLongLong,
    RedisModule_ReplyWithNull,
    RedisModule_ReplyWithArray,
    RedisModule_ReplyWithNullArray,
    RedisModule_ReplyWithMap,
    RedisModule_LatencyAddSample,
    RedisModule_PublishMessage,
    RedisModule_Milliseconds,
    RedisModule_RegisterInfoFunc,
    RedisModule_InfoAddSection,
    RedisModule_InfoAddFieldULongLong,
    RedisModule_AvoidReplicaTraffic,
    RedisModule_InfoAddFieldCString,
    RedisModule_RegisterNumericConfig,
    RedisModule_RegisterStringConfig,
    RedisModule_LoadConfigs,
);
